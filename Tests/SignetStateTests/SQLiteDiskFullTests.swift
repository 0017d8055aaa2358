@testable import SignetState
import SignetStateTestSupport
import Testing

/// A full disk is the one line the file sinks print too, naming the database file: SQLite's
/// SQLITE_FULL alone does not say which file of which disk.
@Suite struct SQLiteDiskFullTests {
    @Test func aTransactionThatFillsTheDiskNamesTheFile() throws {
        let path = Fixture.temporaryDatabase()
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        try database.execute("CREATE TABLE filler (bytes BLOB)")
        // Reaching max_page_count is reported as SQLITE_FULL, the code a disk without space gives.
        try database.execute("PRAGMA max_page_count=64")
        do {
            try database.transaction {
                for _ in 0..<100 { try database.execute("INSERT INTO filler VALUES (zeroblob(65536))") }
            }
            Issue.record("6.4 MB cannot fit in 64 pages")
        } catch let error as SQLiteError {
            #expect(error.isDiskFull)
            #expect(error.description == "no space left on device writing \(path) (SQLite: database or disk is full)")
        }
        // Rolled back: the database is still usable and holds none of it.
        let count = try database.statement(SQLiteQuery("SELECT count(*) FROM filler"))
        #expect(try count.step())
        #expect(count.int64(0) == 0)
    }
}

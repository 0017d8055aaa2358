import Foundation
import SignetTestSupport
import Testing

@testable import SignetState

/// One writer per SQLite database, whoever opens the store: the lock lives in the store,
/// not in the command that happens to run it.
@Suite("SQLite writer lock")
struct SQLiteWriterLockTests {
    @Test func aSecondWriterOnTheSameFileIsRefusedNamingTheHolder() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path("state/hard-coded.sqlite")
        let first = try SQLiteStateStore(path: path)
        let error = #expect(throws: StateStoreError.self) { try SQLiteStateStore(path: path) }
        #expect(error?.isInUse == true)
        #expect(error?.description.contains("in use by pid \(getpid())") == true)

        // A relative path through a symlinked folder names the same database.
        try FileManager.default.createSymbolicLink(atPath: dir.path("link"), withDestinationPath: dir.path("state"))
        let viaLink = #expect(throws: StateStoreError.self) { try SQLiteStateStore(path: dir.path("link/hard-coded.sqlite")) }
        #expect(viaLink?.isInUse == true)

        // Readers take no lock.
        var readOnly = SQLiteStateStore.Options()
        readOnly.readOnly = true
        let reader = try SQLiteStateStore(path: path, options: readOnly)
        try reader.close()

        // Closing releases it.
        try first.close()
        let second = try SQLiteStateStore(path: path)
        try second.close()
    }

    @Test func differentDatabasesInOneFolderDoNotConflict() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let one = try SQLiteStateStore(path: dir.path("one.sqlite"))
        let two = try SQLiteStateStore(path: dir.path("two.sqlite"))
        try one.close()
        try two.close()
    }
}

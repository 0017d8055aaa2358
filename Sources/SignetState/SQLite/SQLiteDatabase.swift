import CSQLite
import Foundation

/// A thin owner of one SQLite connection: pragmas, a prepared-statement cache, and
/// transactions.
///
/// Not thread-safe by itself: ``SQLiteStateStore`` keeps it inside a `Mutex`, so exactly
/// one thread uses the connection at a time. It is opened with `SQLITE_OPEN_NOMUTEX`
/// for that reason (SQLite's own mutexes would only add cost).
final class SQLiteDatabase {
    /// How much SQLite waits for the disk on commit.
    enum Synchronous: String, Sendable, CaseIterable {
        /// fsync at every commit: a committed batch survives power loss (default).
        case full
        /// In WAL mode, fsync only at checkpoints: survives a process crash, not power loss.
        case normal
        /// Never fsync (tests, throwaway data).
        case off
    }

    private var handle: OpaquePointer?
    private var statements: [ObjectIdentifier: SQLiteStatement] = [:]
    let path: String
    /// The folder of a private copy read instead of `path` (see `init`); removed on close.
    private var privateCopy: String?

    /// Process-wide settings, applied once before the first connection initializes SQLite.
    /// Memory statistics off: they serialize every allocation of every connection on one
    /// mutex, 0.5% of the full pipeline's CPU for numbers nobody reads.
    private static let configured: Void = { _ = signet_sqlite3_disable_memory_statistics() }()

    init(path: String, readOnly: Bool = false, synchronous: Synchronous = .full, busyTimeoutMilliseconds: Int32 = 5000) throws(SQLiteError) {
        self.path = path
        Self.configured
        var connection: OpaquePointer?
        var flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        var name = path
        let folder = (path as NSString).deletingLastPathComponent
        if readOnly, access(folder.isEmpty ? "." : folder, W_OK) != 0 {
            // A read-only copy of the data (no writer can be using a folder nobody may write).
            // SQLite cannot create the WAL index (-shm) beside it. With a WAL holding commits
            // not yet in the main file (a copy taken while a pipeline ran, or after kill -9),
            // read a private copy of both files, where SQLite can: `immutable` would ignore the
            // WAL and show an older state, or pages of two states at once ("malformed").
            // Without one, `immutable` reads the file as it is.
            if let copy = try Self.privateCopy(of: path) {
                privateCopy = (copy as NSString).deletingLastPathComponent
                name = copy
            } else {
                var allowed = CharacterSet.urlPathAllowed
                allowed.remove(charactersIn: "?#")
                name = "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
                flags |= SQLITE_OPEN_URI
            }
        }
        let code = sqlite3_open_v2(name, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(connection)
            if let privateCopy { try? FileManager.default.removeItem(atPath: privateCopy) }
            throw SQLiteError(code: code, message: message, context: "open \(path)")
        }
        handle = connection
        sqlite3_extended_result_codes(connection, 1)
        sqlite3_busy_timeout(connection, busyTimeoutMilliseconds)
        if !readOnly {
            // WAL lets the CLI read while a pipeline writes, and makes a commit one
            // sequential append instead of a rollback-journal dance.
            try execute("PRAGMA journal_mode=WAL")
            // A batch rewrites hundreds of scattered pages (random dedupe keys and purchases);
            // checkpointing every 4,000 pages instead of 1,000 copies each page back to the
            // database once for several commits rather than once for every other one.
            try execute("PRAGMA wal_autocheckpoint=4000")
        }
        try execute("PRAGMA synchronous=\(synchronous.rawValue.uppercased())")
        try execute("PRAGMA foreign_keys=OFF")
        // 32 MiB of page cache (SQLite's default is 2 MiB): the random-key indexes (dedupe
        // keys, purchases) are read back from the OS page by page once they outgrow it.
        try execute("PRAGMA cache_size=-32768")
    }

    deinit { close() }

    /// Finalizes every statement and closes the connection (idempotent).
    func close() {
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
        if let privateCopy { try? FileManager.default.removeItem(atPath: privateCopy) }
        privateCopy = nil
    }

    /// Copies `path` and its non-empty `-wal` into a new temporary folder; the copy's path,
    /// or nil when there is no such WAL.
    private static func privateCopy(of path: String) throws(SQLiteError) -> String? {
        let wal = path + "-wal"
        let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue ?? 0
        guard size > 0 else { return nil }
        let folder = NSTemporaryDirectory() + "signet-read-\(UUID().uuidString)"
        let copy = folder + "/" + (path as NSString).lastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            try FileManager.default.copyItem(atPath: wal, toPath: copy + "-wal")
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot copy it with its WAL to read it: \(error)", context: "open \(path)")
        }
        return copy
    }

    fileprivate func connection() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "the database is closed", context: path) }
        return handle
    }

    /// Runs one or more statements without parameters or results.
    func execute(_ sql: String) throws(SQLiteError) {
        let connection = try connection()
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(connection, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(connection))
            sqlite3_free(message)
            throw SQLiteError(code: code, message: text, context: sql)
        }
    }

    /// The prepared statement for `query`, reset (bind every parameter: bindings persist).
    func statement(_ query: SQLiteQuery) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[ObjectIdentifier(query)] {
            cached.reset()
            return cached
        }
        let statement = try SQLiteStatement(database: try connection(), sql: query.sql)
        statements[ObjectIdentifier(query)] = statement
        return statement
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE`), committing when it
    /// returns and rolling back when it throws.
    func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try statement(Self.begin).run()
        let result: Result
        do {
            result = try body()
        } catch {
            try? statement(Self.rollback).run()
            throw named(error)
        }
        do {
            try statement(Self.commit).run()
        } catch {
            try? statement(Self.rollback).run()
            throw named(error)
        }
        return result
    }

    /// A failed write names this database's file (a statement does not know it).
    private func named(_ error: any Error) -> any Error {
        guard var failure = error as? SQLiteError, failure.path == nil else { return error }
        failure.path = path
        return failure
    }

    /// Runs `body` in one read transaction, so a batch of lookups takes the WAL read lock
    /// once instead of once per statement.
    func readTransaction<Result>(_ body: () throws -> Result) throws -> Result {
        try statement(Self.beginRead).run()
        defer {
            // A read transaction left open would make the next BEGIN IMMEDIATE fail.
            if (try? statement(Self.commit).run()) == nil { try? statement(Self.rollback).run() }
        }
        return try body()
    }

    // Prepared once: a batch begins and commits many times a second.
    private static let beginRead = SQLiteQuery("BEGIN DEFERRED")
    private static let begin = SQLiteQuery("BEGIN IMMEDIATE")
    private static let commit = SQLiteQuery("COMMIT")
    private static let rollback = SQLiteQuery("ROLLBACK")
}

extension SQLiteDatabase {
    /// `PRAGMA data_version`: changes whenever another connection commits to the file.
    func dataVersion() throws(SQLiteError) -> Int64 {
        let statement = try statement(Self.dataVersionQuery)
        defer { statement.reset() }
        _ = try statement.step()
        return statement.int64(0) ?? 0
    }

    /// Whether `table` has a column named `column` (for additive schema migrations).
    func columnExists(table: String, column: String) throws(SQLiteError) -> Bool {
        let statement = try statement(Self.columnExistsQuery)
        defer { statement.reset() }
        try statement.bind(1, table)
        try statement.bind(2, column)
        return try statement.step()
    }

    /// Whether `signet_meta` holds `name` (a one-time migration's mark).
    func metaFlag(_ name: String) throws(SQLiteError) -> Bool {
        let statement = try statement(Self.metaFlagQuery)
        defer { statement.reset() }
        try statement.bind(1, name)
        return try statement.step()
    }

    private static let metaFlagQuery = SQLiteQuery("SELECT 1 FROM signet_meta WHERE name = ?1")
    private static let dataVersionQuery = SQLiteQuery("PRAGMA data_version")
    private static let columnExistsQuery = SQLiteQuery("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")

    /// The rowid of the last successful INSERT on this connection.
    var lastInsertRowID: Int64 { (try? connection()).map { sqlite3_last_insert_rowid($0) } ?? 0 }
}

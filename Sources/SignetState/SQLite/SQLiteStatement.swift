import CSQLite

/// A prepared statement with typed binds and column reads.
///
/// Owned by one ``SQLiteDatabase`` and used only while its owner is (under the store's
/// lock), so it needs no synchronisation of its own. Parameters are 1-based like SQLite's,
/// columns 0-based.
///
/// Bindings persist from one run to the next (``reset()`` keeps them, so SQLite reuses the
/// buffers of bound text instead of freeing and allocating them for every row): every use
/// binds every parameter of its statement.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private let database: OpaquePointer
    let sql: String

    init(database: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLiteError(code: code, message: String(cString: sqlite3_errmsg(database)), context: sql)
        }
        self.handle = statement
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Ends the previous execution; the bindings stay until bound again.
    func reset() {
        sqlite3_reset(handle)
    }

    func bind(_ index: Int32, _ value: String?) throws(SQLiteError) {
        guard let value else { return try check(sqlite3_bind_null(handle, index)) }
        var text = value
        let code = text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else {
                    // An empty string still needs a non-null pointer, or SQLite binds NULL.
                    return sqlite3_bind_text(handle, index, "", 0, Self.transient)
                }
                return sqlite3_bind_text(handle, index, base, Int32(chars.count), Self.transient)
            }
        }
        try check(code)
    }

    func bind(_ index: Int32, _ value: Int64?) throws(SQLiteError) {
        guard let value else { return try check(sqlite3_bind_null(handle, index)) }
        try check(sqlite3_bind_int64(handle, index, value))
    }

    func bind(_ index: Int32, _ value: Bool?) throws(SQLiteError) {
        try bind(index, value.map { $0 ? Int64(1) : Int64(0) })
    }

    func bind(_ index: Int32, bytes: [UInt8]) throws(SQLiteError) {
        let code = bytes.withUnsafeBytes { buffer in
            sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), Self.transient)
        }
        try check(code)
    }

    /// Runs one step: true when a row is available, false when done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError(code: code, message: String(cString: sqlite3_errmsg(database)), context: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Runs a statement that returns no rows, then resets it.
    func run() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : sqlite3_column_int64(handle, column)
    }

    func bool(_ column: Int32) -> Bool? { int64(column).map { $0 != 0 } }

    func string(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let blob = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: blob, count: count))
    }

    private func check(_ code: Int32) throws(SQLiteError) {
        guard code == SQLITE_OK else {
            throw SQLiteError(code: code, message: String(cString: sqlite3_errmsg(database)), context: sql)
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies the bound value before the call returns, which is
    /// what makes binding from a temporary Swift buffer safe.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

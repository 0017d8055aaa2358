/// A failure reported by SQLite, with its result code and message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The SQLite (extended) result code.
    public var code: Int32
    /// SQLite's own explanation (`sqlite3_errmsg`).
    public var message: String
    /// What Signet was doing: the SQL or the operation.
    public var context: String
    /// The database file, when the failing call knew it (a transaction's writes).
    public var path: String?

    public init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    /// The disk (or the file system's quota) is full: SQLITE_FULL, whatever its extended code.
    public var isDiskFull: Bool { code & 0xff == 13 }

    /// For a full disk the one line the file sinks print too, naming the file.
    public var description: String {
        if isDiskFull, let path { return "no space left on device writing \(path) (SQLite: \(message))" }
        return "SQLite error \(code): \(message) (\(context))"
    }
}

/// A failure reported by SQLite, with its result code and message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The SQLite (extended) result code.
    public var code: Int32
    /// SQLite's own explanation (`sqlite3_errmsg`).
    public var message: String
    /// What Signet was doing: the SQL or the operation.
    public var context: String

    public init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String { "SQLite error \(code): \(message) (\(context))" }
}

/// A failure reported by SQLite, with its result code and message.
package struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The SQLite (extended) result code.
    package var code: Int32
    /// SQLite's own explanation (`sqlite3_errmsg`).
    package var message: String
    /// What Signet was doing: the SQL or the operation.
    package var context: String
    /// The database file, when the failing call knew it (a transaction's writes).
    package var path: String?

    package init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    /// The disk (or the file system's quota) is full: SQLITE_FULL, whatever its extended code.
    package var isDiskFull: Bool { code & 0xff == 13 }

    /// For a full disk the one line the file sinks print too, naming the file.
    package var description: String {
        if isDiskFull, let path { return "no space left on device writing \(path) (SQLite: \(message))" }
        return "SQLite error \(code): \(message) (\(context))"
    }
}

/// A PostgreSQL store failure, with a message that never contains the password.
public struct PostgresStoreError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// The SQLSTATE reported by the server, when the server reported the failure.
    public var sqlState: String?

    public init(_ message: String, sqlState: String? = nil) {
        self.message = message
        self.sqlState = sqlState
    }

    /// Thrown by every call after ``PostgresStateStore/close()``; never retried.
    static let storeClosed = PostgresStoreError("the PostgreSQL state store is closed")

    var isStoreClosed: Bool { sqlState == nil && message == Self.storeClosed.message }

    /// Serialisation failure, deadlock, a unique key another instance inserted first, or
    /// outbox rows another live instance is delivering (55P03): the transaction is retried
    /// as a whole.
    var isConflict: Bool {
        sqlState == "40001" || sqlState == "40P01" || sqlState == "23505" || sqlState == "55P03"
    }

    /// The server is starting up, shutting down or out of connections (SQLSTATE class 57
    /// and 53, 08): the call is retried like a lost connection.
    var isUnavailable: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("57") || sqlState.hasPrefix("08") || sqlState.hasPrefix("53")
    }

    public var description: String { sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message }
}

import Foundation
public import SignetCore

/// The App Store Server API's budgets in `rate_budgets`, so Apple's pauses (a 429's
/// Retry-After) outlive the process: a run started during one waits it out instead of sending
/// early, which Apple counts against the app. Slots are booked here too (one small write per
/// request, the API's rates are tens a second at most), so the spacing and the pauses live in
/// one place, as with PostgreSQL's `signet_rate_budgets`.
extension SQLiteStateStore: SharedRateBudget {
    public func bookSlot(bucket: String, interval: Duration) throws -> Duration {
        let intervalMicroseconds = max(1, Self.microseconds(interval))
        let wait = try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.bookRateSlot)
            defer { statement.reset() }
            try statement.bind(1, bucket)
            try statement.bind(2, Self.nowMicroseconds())
            try statement.bind(3, intervalMicroseconds)
            return try statement.step() ? statement.int64(0) ?? 0 : 0
        }
        return .microseconds(max(0, wait))
    }

    public func pause(bucket: String, for delay: Duration) throws {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.pauseRateBucket)
            defer { statement.reset() }
            try statement.bind(1, bucket)
            try statement.bind(2, Self.nowMicroseconds() + max(0, Self.microseconds(delay)))
            _ = try statement.step()
        }
    }

    public var budgetDescription: String { "SQLite at \(path)" }

    private static func nowMicroseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

    private static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }
}

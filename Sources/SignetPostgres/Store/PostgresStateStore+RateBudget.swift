import PostgresNIO
public import SignetCore

/// The App Store Server API's budgets in `signet_rate_budgets`, shared by every instance on
/// this database: each booking is one statement (an upsert on the bucket's row, whose row lock
/// orders concurrent bookings), so a request costs one round trip, and the slots of all
/// instances together keep Apple's spacing.
extension PostgresStateStore: SharedRateBudget {
    public func bookSlot(bucket: String, interval: Duration) throws -> Duration {
        let intervalMicroseconds = max(1, Self.microseconds(interval))
        let wait = try withSession("rate budget", waitingOutOutages: false) { session in
            // The slot is the later of the bucket's next free instant, the end of a pause and
            // now; the next free instant moves one interval (the longest asked) past it.
            try session.query("""
                WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS us)
                INSERT INTO signet_rate_budgets AS b (bucket, next_slot_us, interval_us, paused_until_us)
                SELECT \(bucket), now.us + \(intervalMicroseconds), \(intervalMicroseconds), 0 FROM now
                ON CONFLICT (bucket) DO UPDATE SET
                    interval_us = GREATEST(b.interval_us, EXCLUDED.interval_us),
                    next_slot_us = GREATEST(b.next_slot_us, b.paused_until_us, EXCLUDED.next_slot_us - EXCLUDED.interval_us)
                        + GREATEST(b.interval_us, EXCLUDED.interval_us)
                RETURNING next_slot_us - interval_us - (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
                """).first.map { try $0.decode(Int64.self) } ?? 0
        }
        return .microseconds(max(0, wait))
    }

    public func pause(bucket: String, for delay: Duration) throws {
        let delayMicroseconds = max(0, Self.microseconds(delay))
        _ = try withSession("rate budget pause", waitingOutOutages: false) { session in
            try session.query("""
                INSERT INTO signet_rate_budgets AS b (bucket, next_slot_us, interval_us, paused_until_us)
                SELECT \(bucket), 0, 0, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + \(delayMicroseconds)
                ON CONFLICT (bucket) DO UPDATE SET paused_until_us = GREATEST(b.paused_until_us, EXCLUDED.paused_until_us)
                """)
        }
    }

    public var budgetDescription: String { "PostgreSQL at \(options.url.redacted)" }

    private static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }
}

/// A rate budget that several processes spend together: one (app, environment, endpoint)
/// budget of Apple's API across every instance of a deployment, kept where all of them meet
/// (the PostgreSQL state store).
///
/// Each request books a slot: the budget's next free instant, then moves it one interval on,
/// in one atomic step, so slots are spaced by the interval whatever process booked them. The
/// budget's clock is the store's, so the processes' own clocks need not agree. Calls block (a
/// round trip to the store): make them on a `BlockingExecutor`.
public protocol SharedRateBudget: Sendable {
    /// Books the next slot of `bucket`, `interval` after the last one booked by any process
    /// (or the bucket's longer interval, when another process asked a lower rate), never
    /// before a pause. Returns how long from now until the slot (zero when it is now).
    func bookSlot(bucket: String, interval: Duration) throws -> Duration
    /// No slot of `bucket` begins within `delay` from now (a later pause already set wins).
    func pause(bucket: String, for delay: Duration) throws
    /// Names where the budget is kept, for logs (`PostgreSQL at host:port/db`).
    var budgetDescription: String { get }
}

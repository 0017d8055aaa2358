/// What an ``HTTPSource`` has done so far.
public struct HTTPSourceStatistics: Sendable, Equatable {
    /// Requests whose body became a record.
    public var accepted: Int
    /// Requests answered 503 before becoming a record (backpressure, draining).
    public var refused: Int
    /// Records committed (answered 200 if their client was still there).
    public var committed: Int
    /// Commits that covered at least one record: fewer than `committed` means group commit.
    public var commits: Int
    /// Records accepted and not yet committed.
    public var inFlight: Int
}

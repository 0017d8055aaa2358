import SignetCore

/// The `verify` stage got no acceptable revocation answer for a chain within the revocation
/// policy's retry timeout, or before the run was asked to stop: it stops the run (as a stage whose database is gone does), so the held batch
/// is neither dead-lettered nor committed and is read again (Kafka, file), retried by its sender
/// (the webhook answers 503) or left for the next run (stdin: exit 1 with this message).
public struct RevocationUnavailable: Error, Sendable, CustomStringConvertible {
    /// The first held certificate and its failure.
    public var detail: String
    /// Records of the batch that were held.
    public var records: Int
    /// The policy's retry timeout the batch waited out (`revocation.retry_timeout`).
    public var retryTimeout: Duration
    /// The run was asked to stop while the batch waited (before the retry timeout).
    public var stopped: Bool

    /// The error for `records` held records, the first failing as `detail` says.
    public init(detail: String, records: Int, retryTimeout: Duration, stopped: Bool = false) {
        self.detail = detail
        self.records = records
        self.retryTimeout = retryTimeout
        self.stopped = stopped
    }

    public var description: String {
        let when = stopped ? "when the run was asked to stop" : "still after revocation.retry_timeout (\(ConfigDuration.format(retryTimeout)))"
        return "verify: \(detail), \(when); "
            + "\(records) records held, none dead-lettered or committed: a retry or the next run verifies them again "
            + "(revocation.mode soft accepts within a grace past the last good answer)"
    }
}

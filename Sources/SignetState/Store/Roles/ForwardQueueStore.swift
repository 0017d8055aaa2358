/// The `forward` sink's durable queue: Apple's bodies kept until each target accepted them.
package protocol ForwardQueueStore: AnyObject, Sendable {
    /// Queues every body for every target (one entry each), in one transaction, at `instant`
    /// (milliseconds since 1970), due at once.
    func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws
    /// Claims up to `limit` of `target`'s entries due at `now`, oldest first: each is not due
    /// again before `leaseUntil` (so a second claimer, or this one after a crash, retries it
    /// only once the lease ran out) and its attempts grow by one.
    func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem]
    /// Removes the entries `done` (delivered, or dead-lettered by the caller) and makes each of
    /// `retries` due again at its instant with its error.
    func settleForwards(done: [Int64], retries: [ForwardRetry]) throws
    /// How `target`'s entries stand.
    func forwardQueueStatus(target: String) throws -> ForwardQueueStatus
}

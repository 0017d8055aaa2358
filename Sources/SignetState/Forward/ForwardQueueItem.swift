/// One body waiting to be forwarded to one target: an entry of the `forward` sink's durable
/// queue in the state store.
package struct ForwardQueueItem: Sendable, Hashable {
    /// The queue's identity of the entry (ascending in enqueue order).
    package var id: Int64
    /// The receiver's URL.
    package var target: String
    /// The exact bytes to send (the verified notification's raw body).
    package var body: [UInt8]
    /// When it was queued, milliseconds since 1970.
    package var enqueuedAt: Int64
    /// Attempts made, this claim's included.
    package var attempts: Int
    /// Why the previous attempt failed; nil before the first retry.
    package var lastError: String?

    package init(id: Int64, target: String, body: [UInt8], enqueuedAt: Int64, attempts: Int, lastError: String?) {
        self.id = id
        self.target = target
        self.body = body
        self.enqueuedAt = enqueuedAt
        self.attempts = attempts
        self.lastError = lastError
    }
}

/// An entry to try again later (`StateStore/settleForwards(done:retries:)`).
package struct ForwardRetry: Sendable, Hashable {
    package var id: Int64
    /// Not claimed again before this instant, milliseconds since 1970.
    package var at: Int64
    package var error: String

    package init(id: Int64, at: Int64, error: String) {
        self.id = id
        self.at = at
        self.error = error
    }
}

/// How one target's part of the forward queue stands.
package struct ForwardQueueStatus: Sendable, Hashable {
    /// Entries waiting (claimed ones included).
    package var pending: Int
    /// When the oldest of them was queued, milliseconds since 1970; nil when none waits.
    package var oldestEnqueuedAt: Int64?
    /// The earliest instant an entry may be claimed; nil when none waits.
    package var nextDueAt: Int64?

    package init(pending: Int, oldestEnqueuedAt: Int64?, nextDueAt: Int64?) {
        self.pending = pending
        self.oldestEnqueuedAt = oldestEnqueuedAt
        self.nextDueAt = nextDueAt
    }
}

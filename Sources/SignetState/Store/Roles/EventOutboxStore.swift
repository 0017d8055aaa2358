/// The transactional outbox: every entitlement event committed with the state change that
/// caused it, delivered after it, and kept for a purchase's history.
package protocol EventOutboxStore: AnyObject, Sendable {
    /// Outbox rows committed but never marked delivered, oldest first. The caller is
    /// expected to deliver them: from now on they count as in flight in this process.
    func undeliveredEvents() throws -> [OutboxEntry]
    /// Marks outbox rows delivered (after every sink acknowledged them).
    func markDelivered(_ sequences: [Int64], at: Int64) throws
    /// The events of one purchase still kept (undelivered ones, and delivered ones for the
    /// store's outbox retention), oldest first; the newest `limit` when there are more.
    func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry]
}

/// The outbox inside a transaction.
package protocol EventOutboxTransaction {
    /// Appends an event to the outbox; returns its sequence number. `inputKey` is the dedupe
    /// key of the input that caused it.
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64
    /// Outbox rows caused by the input with this dedupe key that were never marked
    /// delivered and are not in flight in this process: another process committed them
    /// and died (or is still delivering them).
    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry]
}

/// One row of the transactional outbox: an event exactly as first serialised.
package struct OutboxEntry: Sendable, Hashable {
    /// Monotonic sequence number (delivery order).
    package var sequence: Int64
    package var eventId: String
    package var eventType: String
    /// The message key (the originalTransactionId).
    package var key: String
    package var environment: String?
    package var productId: String?
    /// The event JSON, byte for byte as first emitted.
    package var payload: [UInt8]
    /// The dedupe key of the input that caused the event.
    package var inputKey: String?
    /// When the event was committed (ms since 1970), where the store reads it back.
    package var createdAt: Int64?

    package init(
        sequence: Int64, eventId: String, eventType: String, key: String, environment: String?, productId: String?,
        payload: [UInt8], inputKey: String? = nil, createdAt: Int64? = nil
    ) {
        self.createdAt = createdAt
        self.sequence = sequence
        self.eventId = eventId
        self.eventType = eventType
        self.key = key
        self.environment = environment
        self.productId = productId
        self.payload = payload
        self.inputKey = inputKey
    }
}

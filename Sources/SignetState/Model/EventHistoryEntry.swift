/// One event of a purchase's history (`StateStore/eventHistory(originalTransactionId:limit:)`):
/// the event exactly as published, and when it was committed and delivered.
///
/// A store keeps events in its outbox: until every sink acknowledged them, and after that for
/// the store's `outbox_retention`; the history is what is kept.
package struct EventHistoryEntry: Sendable, Hashable {
    /// The outbox sequence: publication order.
    package var sequence: Int64
    /// When the store committed the event (ms since 1970).
    package var createdAt: Int64
    /// When every sink had acknowledged it; nil while it is still being delivered.
    package var deliveredAt: Int64?
    /// The event JSON, byte for byte as published.
    package var payload: [UInt8]

    /// An entry of the outbox: its `sequence`, when it was written and delivered, and the event's JSON.
    package init(sequence: Int64, createdAt: Int64, deliveredAt: Int64?, payload: [UInt8]) {
        self.sequence = sequence
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.payload = payload
    }
}

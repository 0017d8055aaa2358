/// One event of a purchase's history (`StateStore/eventHistory(originalTransactionId:limit:)`):
/// the event exactly as published, and when it was committed and delivered.
///
/// A store keeps events in its outbox: until every sink acknowledged them, and after that for
/// the store's `outbox_retention`; the history is what is kept.
public struct EventHistoryEntry: Sendable, Hashable {
    /// The outbox sequence: publication order.
    public var sequence: Int64
    /// When the store committed the event (ms since 1970).
    public var createdAt: Int64
    /// When every sink had acknowledged it; nil while it is still being delivered.
    public var deliveredAt: Int64?
    /// The event JSON, byte for byte as published.
    public var payload: [UInt8]

    /// An entry of the outbox: its `sequence`, when it was written and delivered, and the event's JSON.
    public init(sequence: Int64, createdAt: Int64, deliveredAt: Int64?, payload: [UInt8]) {
        self.sequence = sequence
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.payload = payload
    }
}

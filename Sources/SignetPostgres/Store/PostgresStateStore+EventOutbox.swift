import AppStoreModels
import Foundation
import NIOCore
import PostgresNIO
import SignetCore
package import SignetState
import Synchronization

// PostgresStateStore: the event outbox (EventOutboxStore, EventOutboxTransaction).

/// The ``EventOutboxStore`` role.
extension PostgresStateStore {
    package func undeliveredEvents() throws -> [OutboxEntry] {
        try withSession("outbox redelivery") { session in
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                UPDATE signet_outbox o SET owner = $1
                WHERE o.delivered_at IS NULL AND NOT \(PostgresSchema.ownedByAnotherLiveInstance)
                RETURNING \(PostgresSchema.aliasedOutboxColumns)
                """, binds: Self.binds(instanceId)))
            let entries = try rows.map(PostgresSchema.outboxEntry(from:)).sorted { $0.sequence < $1.sequence }
            inFlight.insert(entries.map(\.sequence))
            return entries
        }
    }

    package func markDelivered(_ sequences: [Int64], at instant: Int64) throws {
        guard !sequences.isEmpty else { return }
        let deleting = options.outboxRetention <= .zero
        try withSession("delivery mark") { session in
            if deleting {
                try session.query("DELETE FROM signet_outbox WHERE seq = ANY(\(sequences))")
            } else {
                try session.query(
                    "UPDATE signet_outbox SET delivered_at = \(instant) WHERE seq = ANY(\(sequences)) AND delivered_at IS NULL")
            }
            inFlight.remove(sequences)
        }
    }

    package func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
        try withSession("history lookup", waitingOutOutages: false) { session in
            let rows = try session.query("""
                SELECT seq, created_at, delivered_at, payload FROM signet_outbox
                WHERE message_key = \(originalTransactionId) ORDER BY seq DESC LIMIT \(Int64(max(0, limit)))
                """)
            return try rows.reversed().map { row in
                let (sequence, createdAt, deliveredAt, payload) = try row.decode((Int64, Int64, Int64?, ByteBuffer).self)
                return EventHistoryEntry(
                    sequence: sequence, createdAt: createdAt, deliveredAt: deliveredAt, payload: Array(payload.readableBytesView))
            }
        }
    }
}

extension PostgresStateTransaction: EventOutboxTransaction {
    /// Takes a sequence number from a block reserved in advance and queues the row for
    /// ``flush()``: one statement per batch instead of one per event.
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        if reservedSequences.isEmpty {
            let count = max(32, 2 * prefetchedKeys.count - pendingEvents.count)
            let rows = try session.query("""
                SELECT nextval(pg_get_serial_sequence('signet_outbox', 'seq')) FROM generate_series(1, \(count))
                """)
            reservedSequences = try rows.map { try $0.decode(Int64.self) }.reversed()
        }
        guard let sequence = reservedSequences.popLast() else {
            throw PostgresStoreError("no outbox sequence number was reserved")
        }
        var json = JSONText(reserving: payload.count * 4 / 3 + 256)
        json.beginObject()
        json.field("seq", sequence)
        json.field("event_id", event.eventId)
        json.field("event_type", event.type.rawValue)
        json.field("message_key", event.messageKey)
        json.field("environment", event.environment)
        json.field("product_id", event.productId)
        json.field("payload", Data(payload).base64EncodedString())
        json.field("created_at", createdAt)
        json.field("input_key", inputKey)
        json.endObject()
        pendingEvents.append(json.bytes)
        claimed.append(sequence)
        return sequence
    }

    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] {
        // Rows of a live instance stay with it: wait (rerun the batch) until it delivered them
        // or its lease expired. Rows of a gone instance (or our own from before a lost commit
        // acknowledgement) are claimed by this instance and redelivered.
        let owners = try session.query(PostgresQuery(unsafeSQL: """
            SELECT 1 FROM signet_outbox o
            WHERE o.input_key = $2 AND o.delivered_at IS NULL AND \(PostgresSchema.ownedByAnotherLiveInstance) LIMIT 1
            """, binds: binds(instanceId, inputKey)))
        if !owners.isEmpty {
            throw PostgresStoreError("another live instance is delivering the events of this input", sqlState: "55P03")
        }
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            UPDATE signet_outbox o SET owner = $1
            WHERE o.input_key = $2 AND o.delivered_at IS NULL AND NOT \(PostgresSchema.ownedByAnotherLiveInstance)
            RETURNING \(PostgresSchema.aliasedOutboxColumns)
            """, binds: binds(instanceId, inputKey)))
        let entries = try rows.map(PostgresSchema.outboxEntry(from:))
            .filter { !inFlight.contains($0.sequence) }
            .sorted { $0.sequence < $1.sequence }
        claimed.append(contentsOf: entries.map(\.sequence))
        return entries
    }
}

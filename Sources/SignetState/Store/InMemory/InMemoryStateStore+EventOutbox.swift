import AppStoreModels
import SignetCore
import Synchronization

// InMemoryStateStore: the event outbox (EventOutboxStore, EventOutboxTransaction).

/// The ``EventOutboxStore`` role.
extension InMemoryStateStore {
    package func undeliveredEvents() throws -> [OutboxEntry] {
        contents.withLock { contents in
            let delivered = Set(contents.delivered.map(\.sequence))
            return contents.outbox.filter { !delivered.contains($0.sequence) }
        }
    }

    package func markDelivered(_ sequences: [Int64], at instant: Int64) throws {
        let deleting = outboxRetention <= .zero
        contents.withLock { contents in
            let marked = Set(sequences)
            if deleting {
                contents.outbox.removeAll { marked.contains($0.sequence) }
            } else {
                contents.delivered.append(contentsOf: sequences.map { ($0, instant) })
            }
        }
    }

    package func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
        contents.withLock { contents in
            let delivered = Dictionary(contents.delivered.map { ($0.sequence, $0.at) }, uniquingKeysWith: { first, _ in first })
            return contents.outbox.filter { $0.key == originalTransactionId }.suffix(max(0, limit)).map { entry in
                EventHistoryEntry(
                    sequence: entry.sequence, createdAt: entry.createdAt ?? 0, deliveredAt: delivered[entry.sequence],
                    payload: entry.payload)
            }
        }
    }
}

extension InMemoryStateStore.Transaction: EventOutboxTransaction {
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        let sequence = nextSequence
        nextSequence += 1
        events.append(OutboxEntry(
            sequence: sequence, eventId: event.eventId, eventType: event.type.rawValue,
            key: event.messageKey, environment: event.environment,
            productId: event.productId, payload: payload, inputKey: inputKey, createdAt: createdAt))
        return sequence
    }

    /// Always empty: a memory store lives in one process, so every undelivered row is in
    /// flight here (emitted by `process`, or handed out by `undeliveredEvents()`).
    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] { [] }
}

import AppStoreModels
import SignetCore
import Synchronization

// InMemoryStateStore: the forward sink's queue (ForwardQueueStore).

/// The ``ForwardQueueStore`` role.
extension InMemoryStateStore {
    package func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
        contents.withLock { contents in
            for body in bodies {
                for target in targets {
                    let id = contents.nextForwardID
                    contents.nextForwardID += 1
                    let item = ForwardQueueItem(id: id, target: target, body: body, enqueuedAt: instant, attempts: 0, lastError: nil)
                    contents.forwards[id] = (item, instant)
                }
            }
        }
    }

    package func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
        contents.withLock { contents in
            // A scan: the memory store serves embedding and tests.
            let due = contents.forwards.values.filter { $0.item.target == target && $0.dueAt <= now }.map(\.item.id).sorted()
            return due.prefix(max(0, limit)).compactMap { id in
                guard var entry = contents.forwards[id] else { return nil }
                entry.item.attempts += 1
                entry.dueAt = leaseUntil
                contents.forwards[id] = entry
                return entry.item
            }
        }
    }

    package func settleForwards(done: [Int64], retries: [ForwardRetry]) throws {
        contents.withLock { contents in
            for id in done { contents.forwards[id] = nil }
            for retry in retries {
                guard var entry = contents.forwards[retry.id] else { continue }
                entry.dueAt = retry.at
                entry.item.lastError = retry.error
                contents.forwards[retry.id] = entry
            }
        }
    }

    package func forwardQueueStatus(target: String) throws -> ForwardQueueStatus {
        contents.withLock { contents in
            let entries = contents.forwards.values.filter { $0.item.target == target }
            return ForwardQueueStatus(
                pending: entries.count, oldestEnqueuedAt: entries.map(\.item.enqueuedAt).min(), nextDueAt: entries.map(\.dueAt).min())
        }
    }
}

import Logging
import SignetCore
import SignetState
import Synchronization

/// Writes the retention responder's answers to the store, many per transaction: while one
/// batch commits, the next gathers (group commit), so recording costs a commit per batch, not
/// per request, and never holds a request (the reply has gone before its record is written).
///
/// Bounded: with `capacity` records waiting (a stalled store) a new one is dropped and
/// ``append(_:)`` says so; the answer stands, and a repeat of that request is decided again.
final class RetentionRecordWriter: Sendable {
    private struct Queue {
        var records: [RetentionOfferRecord] = []
        var flushing = false
    }

    private let queue = Mutex(Queue())
    /// Records per transaction at most: an SQLite store's lookups wait while it commits, so a
    /// batch stays short (tens of microseconds a record).
    static let batchLimit = 64
    private let capacity: Int
    private let store: @Sendable () throws -> any StoreRoles
    /// Store writes block: a thread of their own, off the lookups' executors.
    private let executor = BlockingExecutor(label: "signet.retention.record")
    private let failed: @Sendable (any Error) -> Void

    /// - Parameters:
    ///   - capacity: records waiting at most.
    ///   - store: where they are written (opened lazily with the pipeline).
    ///   - failed: told of a batch the store refused (it is dropped).
    init(capacity: Int, store: @escaping @Sendable () throws -> any StoreRoles, failed: @escaping @Sendable (any Error) -> Void) {
        self.capacity = max(1, capacity)
        self.store = store
        self.failed = failed
    }

    /// Queues `record`; false when the queue is full and it was dropped.
    func append(_ record: RetentionOfferRecord) -> Bool {
        let start = queue.withLock { queue -> Bool? in
            guard queue.records.count < capacity else { return nil }
            queue.records.append(record)
            guard !queue.flushing else { return false }
            queue.flushing = true
            return true
        }
        guard let start else { return false }
        if start { Task { await drain() } }
        return true
    }

    /// Writes batches until none is waiting.
    private func drain() async {
        while true {
            let batch = queue.withLock { queue -> [RetentionOfferRecord] in
                let taken = Array(queue.records.prefix(Self.batchLimit))
                queue.records.removeFirst(taken.count)
                if taken.isEmpty { queue.flushing = false }
                return taken
            }
            guard !batch.isEmpty else { return }
            do {
                try await executor.run { [store] in try store().recordRetentionOffers(batch) }
            } catch {
                failed(error)
            }
        }
    }
}

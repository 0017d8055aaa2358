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
///
/// It also keeps the table from growing without end: at most hourly, after a batch, answers
/// older than `keep` are deleted in chunks (a quiet listener adds none, so needs none deleted).
final class RetentionRecordWriter: Sendable {
    private struct Queue {
        var records: [RetentionOfferRecord] = []
        /// Every record not committed yet (queued or being written), by request: a repeat that
        /// arrives before its first answer's commit is replayed from here, not decided again.
        var uncommitted: [String: RetentionOfferRecord] = [:]
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
    private let keep: Duration
    private let pruned: @Sendable (Int) -> Void
    /// When answers were last pruned (ms since 1970; 0: not yet, so the first batch prunes).
    private let lastPrune = Mutex<Int64>(0)
    /// How often answers are pruned, and how many one statement deletes (a few chunks at
    /// most per pass: what an hour of Apple's requests adds, many times over).
    static let pruneInterval: Int64 = 3_600_000
    static let pruneChunk = 5_000
    static let pruneChunksPerPass = 20

    /// - Parameters:
    ///   - capacity: records waiting at most.
    ///   - store: where they are written (opened lazily with the pipeline).
    ///   - keep: how long answers are kept.
    ///   - failed: told of a batch the store refused (it is dropped), or of a failed prune.
    ///   - pruned: told how many old answers a prune pass deleted (when any).
    init(
        capacity: Int, keep: Duration, store: @escaping @Sendable () throws -> any StoreRoles,
        failed: @escaping @Sendable (any Error) -> Void, pruned: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
        self.capacity = max(1, capacity)
        self.keep = keep
        self.store = store
        self.failed = failed
        self.pruned = pruned
    }

    /// Queues `record`; false when the queue is full and it was dropped.
    func append(_ record: RetentionOfferRecord) -> Bool {
        let start = queue.withLock { queue -> Bool? in
            guard queue.records.count < capacity else { return nil }
            queue.records.append(record)
            if queue.uncommitted[record.requestIdentifier] == nil { queue.uncommitted[record.requestIdentifier] = record }
            guard !queue.flushing else { return false }
            queue.flushing = true
            return true
        }
        guard let start else { return false }
        if start { Task { await drain() } }
        return true
    }

    /// The answer to `requestIdentifier` given by this process and not committed yet; nil when
    /// none is waiting (the store has it, or it was never given here).
    func uncommitted(requestIdentifier: String) -> RetentionOfferRecord? {
        queue.withLock { $0.uncommitted[requestIdentifier] }
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
            // Committed (or dropped): from now on the store answers for them.
            queue.withLock { queue in
                for record in batch where queue.uncommitted[record.requestIdentifier] == record {
                    queue.uncommitted[record.requestIdentifier] = nil
                }
            }
            await pruneIfDue(now: WallClock.milliseconds())
        }
    }

    /// Deletes answers older than `keep`, at most once per ``pruneInterval``.
    func pruneIfDue(now: Int64) async {
        let due = lastPrune.withLock { last in
            guard now - last >= Self.pruneInterval else { return false }
            last = now
            return true
        }
        guard due else { return }
        let before = now - keep.clampedMilliseconds
        do {
            let deleted = try await executor.run { [store] in
                var deleted = 0
                for _ in 0..<Self.pruneChunksPerPass {
                    let chunk = try store().pruneRetentionOffers(answeredBefore: before, limit: Self.pruneChunk)
                    deleted += chunk
                    if chunk < Self.pruneChunk { break }
                }
                return deleted
            }
            if deleted > 0 { pruned(deleted) }
        } catch {
            failed(error)
        }
    }
}

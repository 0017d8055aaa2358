import SignetCore

/// A topic and partition, the unit of Kafka ordering and assignment.
public struct TopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(_ topic: String, _ partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// What the Kafka source handed out and what the runner finished, per partition, so
/// that only the contiguous high-water mark is ever committed.
///
/// The runner may acknowledge records in any order (it does so batch by batch, but a
/// caller of ``Source/commit(_:)`` may pass any subset), so per partition the tracker
/// keeps the handed-out offsets in hand-out order and advances the commit point only
/// across a prefix of finished ones: committing 0, 1 and 3 commits offset 2 (the next
/// one to read), and finishing 2 then moves it to 4. Offsets need not be consecutive
/// (compaction and transaction markers leave gaps): "contiguous" means contiguous in
/// hand-out order.
///
/// Partitions have an assignment epoch. When a partition is revoked its unfinished
/// records stay "stale": a late acknowledgement of one of them is swallowed, even if
/// the partition came back to this consumer in the meantime and the same offset was
/// handed out again, because the runner acknowledges in hand-out order (the ``Source``
/// contract), so the stale copy's acknowledgement always arrives before the new one's.
struct OffsetTracker: Sendable {
    struct PartitionState: Sendable {
        /// Assignment epoch this state belongs to.
        var epoch: UInt64
        /// Handed-out offsets, in hand-out order; entries before `head` are finished.
        var handedOut: [Int64] = []
        var head = 0
        /// Handed-out offsets not yet passed by the commit point.
        var pending: Set<Int64> = []
        /// Finished offsets not yet passed by the commit point.
        var finished: Set<Int64> = []
        /// The next offset to read after the contiguous finished prefix (Kafka's
        /// committed offset is "the next one to consume").
        var commitPoint: Int64?
        /// The last commit point sent to the broker.
        var committed: Int64?
        /// The last commit point the broker acknowledged.
        var confirmed: Int64?
        /// After a commit failed with an error that can pass (a rebalance in progress, the
        /// coordinator moving): when to send it again, and the wait after that.
        var retry: (due: ContinuousClock.Instant, backoff: Duration)?
        /// Finished offsets the commit point has passed but no acknowledged commit has yet, in
        /// order, from `acknowledgedHead` on: what the partition's next owner would read again.
        var awaitingAck: [Int64] = []
        var acknowledgedHead = 0
        /// Records finished in the previous assignment behind a carried-over commit point
        /// (see ``OffsetTracker/assign(_:)``), until a commit up to `carriedPoint` passes.
        var carriedRecords = 0
        var carriedPoint: Int64?
        /// A commit failed since the broker last acknowledged one.
        var refused = false
        /// Fetching is paused to bound the work redone (see ``OffsetTracker/updateHolds(limit:)``).
        var held = false

        /// Finished records no acknowledged commit covers yet.
        var unacknowledged: Int { awaitingAck.count - acknowledgedHead + carriedRecords }

        mutating func advance() {
            while head < handedOut.count, finished.contains(handedOut[head]) {
                let offset = handedOut[head]
                finished.remove(offset)
                pending.remove(offset)
                awaitingAck.append(offset)
                // Never backwards: a point carried over from the previous assignment may lie ahead.
                commitPoint = max(commitPoint ?? offset + 1, offset + 1)
                head += 1
            }
            // Compact now and then so the array does not grow for a long-lived assignment.
            if head > 1024, head * 2 > handedOut.count {
                handedOut.removeFirst(head)
                head = 0
            }
        }
    }

    private(set) var assigned: [TopicPartition: PartitionState] = [:]
    /// Handed out under an earlier assignment and not finished when it ended: how many
    /// acknowledgements to swallow per offset.
    private(set) var stale: [TopicPartition: [Int64: Int]] = [:]
    private var nextEpoch: UInt64 = 1
    /// Acknowledgements ignored because their partition was revoked since (for tests and logs).
    private(set) var ignoredLateCommits = 0

    /// The epoch of a currently assigned partition, nil if not assigned.
    func epoch(of partition: TopicPartition) -> UInt64? { assigned[partition]?.epoch }

    var assignment: Set<TopicPartition> { Set(assigned.keys) }

    /// Points whose commit failed when their partitions were revoked (see ``carryOver(_:records:)``),
    /// with the number of finished records behind each.
    private(set) var carriedOver: [TopicPartition: (point: Int64, records: Int)] = [:]

    /// Starts tracking newly assigned partitions (a fresh epoch each time). A partition that
    /// comes straight back after a revoke whose commit failed gets that point as its commit
    /// point, due to be sent at once: the work was finished, only the commit was refused
    /// while the group rebalanced.
    mutating func assign(_ partitions: [TopicPartition]) {
        for partition in partitions {
            var state = PartitionState(epoch: nextEpoch)
            if let carried = carriedOver[partition] {
                state.commitPoint = carried.point
                state.carriedPoint = carried.point
                state.carriedRecords = carried.records
                state.retry = (.now, Self.initialRetryBackoff)
            }
            assigned[partition] = state
            nextEpoch += 1
        }
        // Only into the assignment right after the revoke: later, another owner may have
        // committed past the point, and sending it would move the group's offset back.
        carriedOver = [:]
    }

    /// Remembers points that a revoke could not commit, for ``assign(_:)``, with the finished
    /// records behind each (``unacknowledgedRecords(_:)`` before the revoke).
    mutating func carryOver(_ points: [TopicPartition: Int64], records: [TopicPartition: Int] = [:]) {
        for (partition, point) in points {
            let entry = (point: point, records: records[partition] ?? 0)
            carriedOver[partition] = carriedOver[partition].map { $0.point >= point ? $0 : entry } ?? entry
        }
    }

    /// Per partition among `partitions`, the finished records no acknowledged commit covers
    /// (what a new owner reads again if the partitions go now); partitions with none are absent.
    func unacknowledgedRecords(_ partitions: [TopicPartition]) -> [TopicPartition: Int] {
        var result: [TopicPartition: Int] = [:]
        for partition in partitions {
            if let count = assigned[partition]?.unacknowledged, count > 0 { result[partition] = count }
        }
        return result
    }

    /// Per partition among `partitions`, the records handed out and not finished yet (in the
    /// stages now), and the first one's offset; partitions with none are absent.
    func unfinishedRecords(_ partitions: [TopicPartition]) -> [TopicPartition: (count: Int, first: Int64)] {
        var result: [TopicPartition: (count: Int, first: Int64)] = [:]
        for partition in partitions {
            guard let state = assigned[partition] else { continue }
            let unfinished = state.handedOut[state.head...].filter { !state.finished.contains($0) }
            if let first = unfinished.first { result[partition] = (unfinished.count, first) }
        }
        return result
    }

    /// Stops tracking revoked partitions and returns their commit points that the broker
    /// has not acknowledged, which the caller commits synchronously before giving the
    /// partitions up: also those already sent asynchronously, whose answer may not have
    /// arrived (or may be a failure that would come too late to send again).
    mutating func revoke(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        var toCommit: [TopicPartition: Int64] = [:]
        for partition in partitions {
            guard let state = assigned.removeValue(forKey: partition) else { continue }
            if let point = state.commitPoint, point != state.confirmed { toCommit[partition] = point }
            // Finished ones were acknowledged already; only the unfinished can still be.
            let unfinished = state.handedOut[state.head...].filter { !state.finished.contains($0) }
            if !unfinished.isEmpty {
                var counts = stale[partition, default: [:]]
                for offset in unfinished { counts[offset, default: 0] += 1 }
                stale[partition] = counts
            }
        }
        return toCommit
    }

    /// Records that `offset` of `partition` went to the runner.
    mutating func handOut(_ partition: TopicPartition, offset: Int64) {
        guard var state = assigned[partition] else { return }
        state.handedOut.append(offset)
        state.pending.insert(offset)
        assigned[partition] = state
    }

    /// Marks positions finished; returns the partitions whose commit point moved past
    /// what was last sent to the broker, with the new commit point.
    mutating func finish(_ positions: [SourcePosition]) -> [TopicPartition: Int64] {
        var touched: Set<TopicPartition> = []
        for position in positions {
            guard let number = position.partition else { continue }
            let partition = TopicPartition(position.stream, number)
            if var counts = stale[partition], let count = counts[position.offset] {
                // A record handed out before its partition was revoked: the new owner
                // (maybe us again, in a later epoch) reads it again, so do not commit it.
                counts[position.offset] = count > 1 ? count - 1 : nil
                stale[partition] = counts.isEmpty ? nil : counts
                ignoredLateCommits += 1
                continue
            }
            guard var state = assigned[partition], state.pending.contains(position.offset) else {
                ignoredLateCommits += 1
                continue
            }
            state.finished.insert(position.offset)
            assigned[partition] = state
            touched.insert(partition)
        }
        var moved: [TopicPartition: Int64] = [:]
        for partition in touched {
            guard var state = assigned[partition] else { continue }
            state.advance()
            assigned[partition] = state
            if let point = state.commitPoint, point != state.committed { moved[partition] = point }
        }
        return moved
    }

    /// The commit point of every assigned partition that the broker has not acknowledged,
    /// sent or not (what a clean stop commits synchronously, sure of the answer).
    func unconfirmed() -> [TopicPartition: Int64] {
        assigned.compactMapValues { state in state.commitPoint.flatMap { $0 == state.confirmed ? nil : $0 } }
    }

    /// Commit points of assigned partitions not yet sent to the broker.
    func uncommitted() -> [TopicPartition: Int64] {
        var result: [TopicPartition: Int64] = [:]
        for (partition, state) in assigned {
            if let point = state.commitPoint, point != state.committed { result[partition] = point }
        }
        return result
    }

    /// Notes that these commit points were sent to the broker (if still assigned in
    /// the same state: a revoke in between already handled them).
    mutating func markCommitted(_ points: [TopicPartition: Int64]) {
        for (partition, point) in points {
            guard var state = assigned[partition] else { continue }
            state.committed = point
            assigned[partition] = state
        }
    }
}

extension OffsetTracker {
    /// The first wait before a failed commit is sent again; it doubles up to ``maximumRetryBackoff``.
    static let initialRetryBackoff = Duration.milliseconds(100)
    static let maximumRetryBackoff = Duration.seconds(5)

    /// An asynchronous commit of `offset` failed: if it is still the last one sent,
    /// forget it so ``uncommitted()`` offers it again. A `retriable` failure is also sent
    /// again by itself (``dueRetries(at:)``) after a backoff, whether or not more records
    /// of the partition finish; a final one waits for the next commit or the close.
    mutating func commitFailed(_ partition: TopicPartition, offset: Int64, retriable: Bool, at now: ContinuousClock.Instant) {
        guard var state = assigned[partition] else { return }
        // Any refusal past the acknowledged point counts, also of a commit a newer one replaced.
        if offset > (state.confirmed ?? .min) {
            state.refused = true
            assigned[partition] = state
        }
        guard state.committed == offset else { return }
        state.committed = nil
        if retriable {
            let backoff = state.retry.map { min($0.backoff * 2, Self.maximumRetryBackoff) } ?? Self.initialRetryBackoff
            state.retry = (now + backoff, backoff)
        } else {
            state.retry = nil
        }
        assigned[partition] = state
    }

    /// A commit of `offset` reached the broker: the partition's backoff starts afresh.
    mutating func commitSucceeded(_ partition: TopicPartition, offset: Int64) {
        guard var state = assigned[partition] else { return }
        let confirmed = max(state.confirmed ?? offset, offset)
        state.confirmed = confirmed
        if state.committed == offset { state.retry = nil }
        state.refused = false
        while state.acknowledgedHead < state.awaitingAck.count, state.awaitingAck[state.acknowledgedHead] < confirmed {
            state.acknowledgedHead += 1
        }
        if state.acknowledgedHead > 1024, state.acknowledgedHead * 2 > state.awaitingAck.count {
            state.awaitingAck.removeFirst(state.acknowledgedHead)
            state.acknowledgedHead = 0
        }
        if let carried = state.carriedPoint, confirmed >= carried {
            state.carriedPoint = nil
            state.carriedRecords = 0
        }
        assigned[partition] = state
    }

    /// Holds or releases partitions for the bound on work redone: a partition whose commits
    /// are refused is held (its fetching paused by the caller) once `limit` of its finished
    /// records wait for an acknowledged commit, and released when a commit passes (revoked,
    /// it is simply gone). Returns the changes since the last call.
    mutating func updateHolds(limit: Int) -> (hold: [TopicPartition], release: [TopicPartition]) {
        var hold: [TopicPartition] = [], release: [TopicPartition] = []
        for (partition, state) in assigned {
            let over = state.refused && state.unacknowledged >= limit
            guard over != state.held else { continue }
            assigned[partition]?.held = over
            if over { hold.append(partition) } else { release.append(partition) }
        }
        return (hold, release)
    }

    /// Assigned partitions held for the bound (see ``updateHolds(limit:)``).
    var held: Set<TopicPartition> { Set(assigned.filter(\.value.held).keys) }

    /// Commit points of owned partitions whose retry is due: send them now (and mark them
    /// committed, as any commit sent).
    func dueRetries(at now: ContinuousClock.Instant) -> [TopicPartition: Int64] {
        var result: [TopicPartition: Int64] = [:]
        for (partition, state) in assigned {
            guard let retry = state.retry, retry.due <= now, let point = state.commitPoint, point != state.committed else { continue }
            result[partition] = point
        }
        return result
    }
}

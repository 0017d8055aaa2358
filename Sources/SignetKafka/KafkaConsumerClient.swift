import CRdKafka
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Logging
import SignetCore
import Synchronization

/// The part of a consumer that librdkafka's callbacks reach through the handle's
/// opaque pointer: the offset tracker, the logger, and what lost partitions left to redo.
///
/// A separate object (not ``KafkaConsumerClient`` itself) so that it outlives the
/// `rd_kafka_t`: the client destroys the handle in its deinit, which can still invoke
/// the rebalance callback, while this object is kept alive by the client's stored
/// property until the deinit body has finished.
final class ConsumerCallbacks: KafkaLogSink, Sendable {
    let tracker = Mutex(OffsetTracker())
    let logger: Logger
    /// Counts rebalance events (assign + revoke), for tests and diagnostics.
    let rebalances = Atomic<Int>(0)
    /// Commit points of partitions lost (no clean revoke) with finished records uncommitted
    /// while the consumer was closing, and how many records: the close reports them as left
    /// to redo, and the stop exits non-zero.
    let lost = Mutex<(points: [TopicPartition: Int64], records: Int)>(([:], 0))
    /// Finished records lost with their partitions over the whole run (the close included).
    let recordsToRedo = Atomic<Int>(0)
    /// Set when the close begins: a loss from then on is the stop's (it exits non-zero); one
    /// before is the run's (error log and metric; the run goes on, as the group does).
    let closing = Atomic<Bool>(false)
    /// A commit's answer arrived since the poll last looked: the bound's holds may change.
    let commitAnswered = Atomic<Bool>(false)
    private let redoMetrics: KafkaRedoMetrics

    init(logger: Logger, redoMetrics: KafkaRedoMetrics = KafkaRedoMetrics()) {
        self.logger = logger
        self.redoMetrics = redoMetrics
    }


    /// The rebalance callback: called by librdkafka on the thread that polls the
    /// consumer (``KafkaConsumerClient/poll(maxRecords:timeout:)`` or close), never
    /// concurrently with itself.
    func rebalance(_ handle: OpaquePointer, _ error: rd_kafka_resp_err_t, _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) {
        rebalances.add(1, ordering: .relaxed)
        let cooperative = String(cString: rd_kafka_rebalance_protocol(handle)) == "COOPERATIVE"
        let partitions = PartitionList.entries(of: list).map(\.0)
        switch error {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            tracker.withLock { $0.assign(partitions) }
            logger.info("kafka: assigned \(partitions.map(\.description).joined(separator: ", "))")
            if cooperative {
                if let failure = rd_kafka_incremental_assign(handle, list) {
                    logger.error("kafka: \(KafkaError("incremental assign failed", consuming: failure))")
                }
            } else {
                let result = rd_kafka_assign(handle, list)
                if result != RD_KAFKA_RESP_ERR_NO_ERROR {
                    logger.error("kafka: \(KafkaError("assign failed", error: result))")
                }
            }
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            let lost = rd_kafka_assignment_lost(handle) != 0
            // From here on, acknowledgements of these partitions' handed-out records are
            // ignored and nothing polled for them earlier in this poll is handed out.
            let (finished, records, inFlight, held) = tracker.withLock { tracker in
                let records = tracker.unacknowledgedRecords(partitions)
                let inFlight = tracker.unfinishedRecords(partitions)
                let held = tracker.held.intersection(partitions)
                return (tracker.revoke(partitions), records, inFlight, held)
            }
            // Paused for the bound on work redone: a pause outlives the assignment in
            // librdkafka, and the partition may come back.
            if !held.isEmpty {
                _ = PartitionList(held.map { ($0, nil) }).withList { rd_kafka_resume_partitions(handle, $0) }
            }
            if lost {
                lostWithoutRevoke(partitions, finished: finished, records: records, inFlight: inFlight)
            } else if !finished.isEmpty {
                // Synchronously, so the next owner starts right after what we finished
                // (librdkafka documents a sync commit in the revoke callback); a retriable
                // failure is tried again for a short while (the rebalance waits for us).
                let result = KafkaConsumerClient.commitSync(handle, finished, until: .now + Self.revokeCommitTimeout)
                if result != RD_KAFKA_RESP_ERR_NO_ERROR {
                    // Sent again if the partitions come straight back to this member.
                    tracker.withLock { $0.carryOver(finished, records: records) }
                    logger.error(
                        "kafka: could not commit before giving up \(KafkaConsumerClient.describe(finished)): \(KafkaError("commit", error: result)); the next owner reads those records again")
                }
            }
            logger.info("kafka: revoked \(partitions.map(\.description).joined(separator: ", "))")
            if cooperative {
                if let failure = rd_kafka_incremental_unassign(handle, list) {
                    logger.error("kafka: \(KafkaError("incremental unassign failed", consuming: failure))")
                }
            } else {
                _ = rd_kafka_assign(handle, nil)
            }
        default:
            logger.error("kafka: rebalance error: \(KafkaError("rebalance", error: error))")
            let all = Array(tracker.withLock { $0.assignment })
            _ = tracker.withLock { $0.revoke(all) }
            _ = rd_kafka_assign(handle, nil)
        }
    }

    /// How long a revoke waits for its commit to pass a retriable error (the group's
    /// rebalance waits for this member meanwhile).
    static let revokeCommitTimeout = Duration.seconds(3)

    /// Partitions lost without a clean revoke (session timeout, fenced member): another member
    /// may own them already, so nothing is committed, and the finished records behind the last
    /// acknowledged commit will be processed again. Never silent: logged at error level and
    /// counted; lost while closing, they are kept for the close, which makes the stop exit
    /// non-zero (during a long run the metric shows them: a rebalance under load is no reason
    /// for a service's stop, days later, to report failure).
    ///
    /// Records still in the stages (`inFlight`) count too: they finish, publish their events and
    /// are never committed (their acknowledgement is ignored, the partition is gone), so the next
    /// owner processes them again as well.
    private func lostWithoutRevoke(
        _ partitions: [TopicPartition], finished: [TopicPartition: Int64], records: [TopicPartition: Int],
        inFlight: [TopicPartition: (count: Int, first: Int64)]
    ) {
        let names = partitions.map(\.description).joined(separator: ", ")
        guard !finished.isEmpty || !inFlight.isEmpty else {
            logger.warning("kafka: lost \(names) without a clean revoke; no record was in flight or waiting for a commit")
            return
        }
        let finishedCount = records.values.reduce(0, +)
        let inFlightCount = inFlight.values.reduce(0) { $0 + $1.count }
        // Where the next owner starts, at the latest: the commit point behind the finished
        // ones, else the first record in flight.
        var points = finished
        for (partition, unfinished) in inFlight where points[partition] == nil { points[partition] = unfinished.first }
        let atStop = closing.load(ordering: .acquiring)
        if atStop {
            lost.withLock { lost in
                lost.points.merge(points) { max($0, $1) }
                lost.records += finishedCount + inFlightCount
            }
        }
        recordsToRedo.add(finishedCount + inFlightCount, ordering: .relaxed)
        redoMetrics.add(records.merging(inFlight.mapValues(\.count), uniquingKeysWith: +))
        var what: [String] = []
        if finishedCount > 0 { what.append("\(finishedCount) finished records were not committed (\(KafkaConsumerClient.describe(finished)))") }
        if inFlightCount > 0 {
            what.append("\(inFlightCount) records were still in the stages (\(inFlight.map { "\($0.key) from \($0.value.first)" }.sorted().joined(separator: ", "))): they finish and publish their events, uncommitted")
        }
        logger.error(
            "kafka: lost \(names) without a clean revoke (session timeout or fenced member): \(what.joined(separator: "; ")); whoever owns those partitions next processes them again\(atStop ? "" : " (signet_kafka_records_to_redo_total counts them; the run goes on)")")
    }

    /// Result of an asynchronous commit. On failure the points count as unsent again: a
    /// retriable failure is sent again after a backoff by ``KafkaConsumerClient/poll``,
    /// even if no more records arrive; a final one goes with the next commit or the close.
    func commitResult(_ error: rd_kafka_resp_err_t, _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) {
        guard error != RD_KAFKA_RESP_ERR__NO_OFFSET else { return }
        let entries = PartitionList.entries(of: list)
        let now = ContinuousClock.now
        defer { commitAnswered.store(true, ordering: .relaxed) }
        // The request's error, or a partition's own.
        var failed: [(TopicPartition, Int64, rd_kafka_resp_err_t)] = []
        tracker.withLock { tracker in
            for (partition, offset, partitionError) in entries {
                let cause = error != RD_KAFKA_RESP_ERR_NO_ERROR ? error : partitionError
                if cause == RD_KAFKA_RESP_ERR_NO_ERROR {
                    tracker.commitSucceeded(partition, offset: offset)
                } else {
                    tracker.commitFailed(partition, offset: offset, retriable: KafkaCommitOutcome.isRetriable(cause), at: now)
                    failed.append((partition, offset, cause))
                }
            }
        }
        guard let (_, _, cause) = failed.first else { return }
        let points = Dictionary(failed.map { ($0.0, $0.1) }, uniquingKeysWith: max)
        if KafkaCommitOutcome.isRetriable(cause) {
            logger.warning("kafka: offset commit of \(KafkaConsumerClient.describe(points)) failed, sending it again shortly: \(KafkaError("commit", error: cause))")
        } else {
            logger.error("kafka: offset commit of \(KafkaConsumerClient.describe(points)) failed: \(KafkaError("commit", error: cause)); it goes with the next commit or the close")
        }
    }
}

private let rebalanceCallback: @convention(c) (
    OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?
) -> Void = { handle, error, list, opaque in
    guard let handle, let opaque else { return }
    Unmanaged<ConsumerCallbacks>.fromOpaque(opaque).takeUnretainedValue().rebalance(handle, error, list)
}

private let offsetCommitCallback: @convention(c) (
    OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?
) -> Void = { _, error, list, opaque in
    guard let opaque else { return }
    Unmanaged<ConsumerCallbacks>.fromOpaque(opaque).takeUnretainedValue().commitResult(error, list)
}

/// A librdkafka high-level consumer (consumer group member) with manual commits.
///
/// Thread safety (why `@unchecked Sendable` is sound): the only mutable Swift state is
/// in ``ConsumerCallbacks`` (behind a `Mutex`) and `closed` (a `Mutex`). The handle is
/// immutable; librdkafka documents its API as thread-safe, and Signet additionally
/// calls the blocking poll/close only from the source's one serial queue, so the
/// rebalance callback (run inside those calls) is never concurrent with itself.
/// `rd_kafka_commit` with async=1 only enqueues and may run on any thread.
final class KafkaConsumerClient: @unchecked Sendable {
    private let handle: OpaquePointer
    let callbacks: ConsumerCallbacks
    private let closed = Mutex(false)
    private let lagMetrics = KafkaLagMetrics()
    private let group: String
    private let created = ContinuousClock.now
    /// Whether "joining group G" was logged (set once, from the polling queue).
    private let joinLogged = Atomic<Bool>(false)
    /// How long without an assignment before the join is logged.
    static let joinNoticeDelay = Duration.seconds(3)
    /// The longest `close()` waits for a join in progress to settle (see there).
    static let joinSettleTimeout = Duration.seconds(10)
    /// Records a keep-alive poll took while the runner was not asking (see ``keepAlive()``),
    /// with their partition's epoch then; the next ``poll(maxRecords:timeout:)`` hands them out
    /// first. Only touched on the source's queue; a Mutex for Sendable.
    private let parked = Mutex<[(record: Record, partition: TopicPartition, epoch: UInt64)]>([])
    /// A keep-alive paused the assignment; the next poll resumes it.
    private let pausedByKeepAlive = Atomic<Bool>(false)
    /// A fatal error a keep-alive poll met, thrown by the next poll.
    private let keepAliveFailure = Mutex<(any Error)?>(nil)
    /// Finished records a partition may have waiting for a refused commit before it is paused.
    private let maxUncommittedPerPartition: Int

    /// Creates the consumer and subscribes. Blocking only briefly (no network wait).
    init(properties: [KafkaProperty], topics: [String], maxUncommittedPerPartition: Int = .max, logger: Logger) throws {
        let callbacks = ConsumerCallbacks(logger: logger)
        let conf = KafkaConf()
        try conf.set(properties)
        rd_kafka_conf_set_rebalance_cb(conf.raw, rebalanceCallback)
        rd_kafka_conf_set_offset_commit_cb(conf.raw, offsetCommitCallback)
        rd_kafka_conf_set_log_cb(conf.raw, kafkaLogCallback)
        // Unretained: `callbacks` is a stored property of this client, which destroys
        // the handle (the only user of the pointer) before releasing it.
        rd_kafka_conf_set_opaque(conf.raw, Unmanaged.passUnretained(callbacks).toOpaque())
        let handle = try makeKafkaHandle(RD_KAFKA_CONSUMER, conf: conf, what: "Kafka consumer")
        // Serve rebalance and commit callbacks from rd_kafka_consumer_poll on our queue.
        rd_kafka_poll_set_consumer(handle)
        let result = PartitionList(topics: topics).withList { rd_kafka_subscribe(handle, $0) }
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            rd_kafka_destroy(handle)
            throw KafkaError("cannot subscribe to \(topics.joined(separator: ","))", error: result)
        }
        self.handle = handle
        self.callbacks = callbacks
        self.maxUncommittedPerPartition = maxUncommittedPerPartition
        self.group = properties.last { $0.name == "group.id" }?.value ?? "?"
    }

    /// Logs once when no assignment has come a few seconds after start: a join can take
    /// several seconds (or hang on an unreachable coordinator), and silence looks like a hang.
    private func noticeSlowJoin() {
        guard callbacks.rebalances.load(ordering: .relaxed) == 0, ContinuousClock.now - created > Self.joinNoticeDelay,
            !joinLogged.exchange(true, ordering: .relaxed)
        else { return }
        callbacks.logger.notice("kafka: joining group \(group), waiting for partition assignment")
    }

    deinit {
        // Closes the consumer first if close() was not called (librdkafka does that).
        rd_kafka_destroy(handle)
    }

    /// Polls up to `maxRecords` messages: waits up to `timeout` for the first one, then
    /// takes only what is already fetched. Blocking: call on the source's queue.
    ///
    /// Records of partitions revoked during this call are dropped (never handed out);
    /// every returned record is registered with the tracker.
    func poll(maxRecords: Int, timeout: Duration) throws -> [Record] {
        if let failure = keepAliveFailure.withLock({ $0.take() }) { throw failure }
        resumeAfterKeepAlive()
        // What a keep-alive parked was polled before anything polled now: it goes first.
        let earlier = parked.withLock { parked in
            let taken = Array(parked.prefix(maxRecords))
            parked.removeFirst(taken.count)
            return taken
        }
        let polled = try handOut(pollEntries(maxRecords: maxRecords - earlier.count, timeout: earlier.isEmpty ? timeout : .zero))
        guard !earlier.isEmpty || !polled.isEmpty else { return [] }
        // Parked records were handed out when polled; a revoke since has dropped them (their
        // partition's epoch moved on) and the next owner reads them again.
        let current = callbacks.tracker.withLock { tracker in
            earlier.filter { tracker.epoch(of: $0.partition) == $0.epoch }
        }
        return (current + polled).map(\.record)
    }

    /// Registers with the tracker the polled entries whose partition is still at the epoch they
    /// were polled in, and returns them; a revoke during the poll dropped the others.
    private func handOut(_ polled: [(record: Record, partition: TopicPartition, epoch: UInt64)]) -> [(record: Record, partition: TopicPartition, epoch: UInt64)] {
        guard !polled.isEmpty else { return [] }
        return callbacks.tracker.withLock { tracker in
            polled.filter { entry in
                guard tracker.epoch(of: entry.partition) == entry.epoch else { return false }
                tracker.handOut(entry.partition, offset: entry.record.position.offset)
                return true
            }
        }
    }

    /// Serves the group while the runner does not ask for records (the pipeline behind the
    /// source is backed up): pauses every assigned partition, so nothing more is fetched, and
    /// polls without waiting, so librdkafka counts the member as alive (`max.poll.interval.ms`),
    /// a rebalance completes instead of waiting for this member, and failed commits go out
    /// again. What the poll still returns (a partition assigned during it, before its pause)
    /// is handed out to the tracker and parked for the next poll, in order, never dropped: a
    /// dropped message would leave a gap the next owner skips. The next
    /// ``poll(maxRecords:timeout:)`` resumes the partitions; librdkafka then fetches from the
    /// last position handed out. Blocking: call on the source's queue.
    func keepAlive() {
        pauseAssignment()
        do {
            let current = try handOut(pollEntries(maxRecords: Self.keepAliveBatch, timeout: .zero))
            parked.withLock { $0.append(contentsOf: current) }
            // Assigned during this poll: paused now, before it fetches much.
            pauseAssignment()
        } catch {
            keepAliveFailure.withLock { $0 = error }
        }
    }

    /// The most messages one keep-alive poll takes (normally none: the partitions are paused).
    static let keepAliveBatch = 500

    /// Whether a keep-alive has the partitions paused now.
    var isPausedByKeepAlive: Bool { pausedByKeepAlive.load(ordering: .relaxed) }

    // The keep-alive's pause and resume, and the bound's (``applyHolds(_:)``), are made under
    // the tracker's lock, so that one never undoes the other: a resume computed before a hold
    // and sent after it would fetch a held partition again.

    private func pauseAssignment() {
        callbacks.tracker.withLock { tracker in
            let assigned = tracker.assignment
            guard !assigned.isEmpty else { return }
            // Pausing a paused partition changes nothing; a partition assigned since is paused too.
            _ = PartitionList(assigned.map { ($0, nil) }).withList { rd_kafka_pause_partitions(handle, $0) }
            pausedByKeepAlive.store(true, ordering: .relaxed)
        }
    }

    private func resumeAfterKeepAlive() {
        callbacks.tracker.withLock { tracker in
            guard pausedByKeepAlive.exchange(false, ordering: .relaxed) else { return }
            // Partitions held for the bound stay paused until a commit passes.
            let resumed = tracker.assignment.subtracting(tracker.held)
            guard !resumed.isEmpty else { return }
            _ = PartitionList(resumed.map { ($0, nil) }).withList { rd_kafka_resume_partitions(handle, $0) }
        }
    }

    /// Pauses the partitions that reached the bound on finished records waiting for a refused
    /// commit (`max_uncommitted_per_partition`), so a member whose commits the coordinator
    /// refuses stops piling up work its next owner would do again; resumes those whose commit
    /// passed. Call under the tracker's lock.
    private func applyHolds(_ tracker: inout OffsetTracker) {
        let (hold, release) = tracker.updateHolds(limit: maxUncommittedPerPartition)
        if !hold.isEmpty {
            _ = PartitionList(hold.map { ($0, nil) }).withList { rd_kafka_pause_partitions(handle, $0) }
            let counts = tracker.unacknowledgedRecords(hold).sorted { $0.key.description < $1.key.description }
            callbacks.logger.warning(
                "kafka: commits of \(counts.map { "\($0.key) (\($0.value) finished records)" }.joined(separator: ", ")) are refused; not fetching more of them until a commit passes (max_uncommitted_per_partition \(maxUncommittedPerPartition))")
        }
        guard !release.isEmpty else { return }
        // While the keep-alive has everything paused, its own resume takes these along.
        if !pausedByKeepAlive.load(ordering: .relaxed) {
            _ = PartitionList(release.map { ($0, nil) }).withList { rd_kafka_resume_partitions(handle, $0) }
        }
        callbacks.logger.info("kafka: a commit of \(release.map(\.description).sorted().joined(separator: ", ")) passed; fetching again")
    }

    /// Up to `maxRecords` messages with their partition's epoch when polled; not yet handed out.
    private func pollEntries(maxRecords: Int, timeout: Duration) throws -> [(record: Record, partition: TopicPartition, epoch: UInt64)] {
        var polled: [(record: Record, partition: TopicPartition, epoch: UInt64)] = []
        let deadline = ContinuousClock.now + timeout
        noticeSlowJoin()
        resendDueCommits()
        while polled.count < maxRecords {
            let remaining = deadline - ContinuousClock.now
            let wait = polled.isEmpty ? milliseconds(remaining) : 0
            let message = rd_kafka_consumer_poll(handle, wait)
            // A refusal served by this poll holds its partitions before more of them are
            // taken (a held partition's queued messages are not returned any more).
            if callbacks.commitAnswered.exchange(false, ordering: .relaxed) {
                callbacks.tracker.withLock { applyHolds(&$0) }
            }
            guard let message else {
                if polled.isEmpty, ContinuousClock.now < deadline { continue }
                break
            }
            defer { rd_kafka_message_destroy(message) }
            let error = message.pointee.err
            if error != RD_KAFKA_RESP_ERR_NO_ERROR {
                try handleConsumerError(error, message)
                continue
            }
            guard let topicHandle = message.pointee.rkt else { continue }
            let partition = TopicPartition(String(cString: rd_kafka_topic_name(topicHandle)), message.pointee.partition)
            // The epoch now: a revoke later in this call changes or removes it.
            guard let epoch = callbacks.tracker.withLock({ $0.epoch(of: partition) }) else { continue }
            let bytes: [UInt8] =
                if let payload = message.pointee.payload, message.pointee.len > 0 {
                    Array(UnsafeRawBufferPointer(start: payload, count: message.pointee.len))
                } else {
                    []
                }
            let position = SourcePosition(stream: partition.topic, partition: partition.partition, offset: message.pointee.offset)
            var record = Record(raw: bytes, position: position)
            var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            let timestamp = rd_kafka_message_timestamp(message, &timestampType)
            if timestampType != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE, timestamp >= 0 { record.sourceTimestamp = timestamp }
            polled.append((record, partition, epoch))
        }
        guard !polled.isEmpty else { return [] }
        var lastOffsets: [TopicPartition: Int64] = [:]
        for entry in polled { lastOffsets[entry.partition] = entry.record.position.offset }
        lagMetrics.update(handle: handle, lastOffsets: lastOffsets)
        return polled
    }

    private func handleConsumerError(_ error: rd_kafka_resp_err_t, _ message: UnsafeMutablePointer<rd_kafka_message_t>) throws {
        if error == RD_KAFKA_RESP_ERR__PARTITION_EOF { return }
        var detail = ""
        if let payload = message.pointee.payload, message.pointee.len > 0 {
            detail = String(decoding: UnsafeRawBufferPointer(start: payload, count: message.pointee.len), as: UTF8.self)
        }
        if error == RD_KAFKA_RESP_ERR__FATAL {
            var text = [CChar](repeating: 0, count: 512)
            let cause = rd_kafka_fatal_error(handle, &text, text.count)
            throw KafkaError("fatal consumer error: \(text.nulTerminatedString)", code: cause.rawValue)
        }
        // Transport hiccups, unknown topics, ...: librdkafka recovers on its own.
        callbacks.logger.warning("kafka: consumer: \(KafkaError(detail.isEmpty ? "consume" : detail, error: error))")
    }

    /// Marks positions finished and commits (asynchronously) where the contiguous
    /// high-water mark moved. Does not block: the request is only enqueued.
    func finish(_ positions: [SourcePosition]) {
        callbacks.tracker.withLock { tracker in
            let moved = tracker.finish(positions)
            applyHolds(&tracker)
            guard !moved.isEmpty else { return }
            // Under the lock so a revoke cannot slip between computing and enqueueing:
            // librdkafka then sends this commit before the revoke's own.
            let result = PartitionList(offsets: moved).withList { rd_kafka_commit(handle, $0, 1) }
            if result == RD_KAFKA_RESP_ERR_NO_ERROR {
                tracker.markCommitted(moved)
            } else {
                callbacks.logger.warning("kafka: \(KafkaError("cannot enqueue commit", error: result))")
            }
        }
    }

    /// Sends again, asynchronously, the commits whose retriable failure's backoff is over.
    private func resendDueCommits() {
        callbacks.tracker.withLock { tracker in
            let due = tracker.dueRetries(at: .now)
            guard !due.isEmpty else { return }
            let result = PartitionList(offsets: due).withList { rd_kafka_commit(handle, $0, 1) }
            if result == RD_KAFKA_RESP_ERR_NO_ERROR { tracker.markCommitted(due) }
        }
    }

    /// Commits every finished commit point the broker has not acknowledged synchronously
    /// (also those sent asynchronously: their answer may still be on its way, or be a
    /// failure), serving the group between
    /// attempts while a retriable error lasts (a rebalance in progress completes only once
    /// this member polls), until `deadline`. Returns what is still uncommitted then, with
    /// the last error. Blocking: call on the source's queue.
    func commitFinished(until deadline: ContinuousClock.Instant) -> (points: [TopicPartition: Int64], error: rd_kafka_resp_err_t)? {
        var backoff = OffsetTracker.initialRetryBackoff
        while true {
            // A revoke served by the poll below commits (and drops) its partitions itself.
            let points = callbacks.tracker.withLock { $0.unconfirmed() }
            guard !points.isEmpty else { return nil }
            let result = PartitionList(offsets: points).withList { rd_kafka_commit(handle, $0, 0) }
            if result == RD_KAFKA_RESP_ERR_NO_ERROR {
                callbacks.tracker.withLock { tracker in
                    tracker.markCommitted(points)
                    for (partition, point) in points { tracker.commitSucceeded(partition, offset: point) }
                }
                return nil
            }
            guard KafkaCommitOutcome.isRetriable(result), ContinuousClock.now + backoff < deadline else {
                return (points, result)
            }
            callbacks.logger.notice("kafka: commit of \(Self.describe(points)) failed (\(KafkaError("commit", error: result))); retrying in \(backoff)")
            // Polled messages are dropped unhanded (nothing commits them): the next owner reads them.
            let until = ContinuousClock.now + backoff
            while ContinuousClock.now < until {
                if let message = rd_kafka_consumer_poll(handle, max(1, milliseconds(until - .now))) { rd_kafka_message_destroy(message) }
            }
            backoff = min(backoff * 2, .seconds(1))
        }
    }

    /// Commits what is finished (retrying through a rebalance until `commitTimeout`), then
    /// leaves the group (rd_kafka_consumer_close runs the final revoke through the
    /// rebalance callback). Throws ``UncommittedPositions`` when finished work stayed
    /// uncommitted. Blocking; idempotent.
    func close(commitTimeout: Duration) throws {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        callbacks.closing.store(true, ordering: .releasing)
        let left = commitFinished(until: .now + commitTimeout)
        settleJoin()
        let result = rd_kafka_consumer_close(handle)
        // After the close: its final revoke may find the assignment lost too.
        let lost = callbacks.lost.withLock { $0 }
        if left != nil || !lost.points.isEmpty {
            var positions: [String: Int64] = [:]
            var reasons: [String] = []
            if !lost.points.isEmpty {
                for (partition, point) in lost.points { positions[partition.description] = point }
                reasons.append("\(lost.records) finished records of \(Self.describe(lost.points)) were lost with their partitions (no clean revoke)")
            }
            if let left {
                for (partition, point) in left.points { positions[partition.description] = point }
                reasons.append("\(KafkaError("commit", error: left.error))")
            }
            throw UncommittedPositions(positions: positions, reason: reasons.joined(separator: "; "))
        }
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("consumer close failed", error: result) }
    }

    /// `topic[0] at 42, topic[1] at 7`, for logs.
    static func describe(_ points: [TopicPartition: Int64]) -> String {
        points.sorted { $0.key.description < $1.key.description }.map { "\($0.key) at \($0.value)" }.joined(separator: ", ")
    }

    /// A synchronous commit of `points`, sent again after a short backoff while it fails
    /// with a retriable error, until `deadline`. For the revoke callback, which must not
    /// poll (it runs inside a poll).
    static func commitSync(_ handle: OpaquePointer, _ points: [TopicPartition: Int64], until deadline: ContinuousClock.Instant) -> rd_kafka_resp_err_t {
        var backoff = OffsetTracker.initialRetryBackoff
        while true {
            let result = PartitionList(offsets: points).withList { rd_kafka_commit(handle, $0, 0) }
            guard result != RD_KAFKA_RESP_ERR_NO_ERROR, KafkaCommitOutcome.isRetriable(result),
                ContinuousClock.now + backoff < deadline
            else { return result }
            usleep(UInt32(clamping: backoff.clampedNanoseconds / 1000))
            backoff = min(backoff * 2, .seconds(1))
        }
    }

    /// Waits (bounded) for a group join still in progress to finish before closing.
    ///
    /// librdkafka 2.0.2 (Debian 12) aborts in `rd_kafka_sticky_assignor_state_destroy` when a
    /// cooperative-sticky member is closed mid-join (fixed in later releases), so a SIGTERM in
    /// the first seconds of a run killed the process instead of draining. Messages polled
    /// here were never handed out, so they are dropped uncommitted and read again later.
    private func settleJoin() {
        guard callbacks.rebalances.load(ordering: .relaxed) == 0 else { return }
        let deadline = ContinuousClock.now + Self.joinSettleTimeout
        while callbacks.rebalances.load(ordering: .relaxed) == 0, ContinuousClock.now < deadline {
            if let message = rd_kafka_consumer_poll(handle, 100) { rd_kafka_message_destroy(message) }
        }
    }

    /// The currently assigned partitions.
    var assignment: Set<TopicPartition> { callbacks.tracker.withLock { $0.assignment } }

    /// Partitions paused for the bound on finished records waiting for a refused commit.
    var held: Set<TopicPartition> { callbacks.tracker.withLock { $0.held } }

    /// What the tracker would commit now (for tests).
    var uncommitted: [TopicPartition: Int64] { callbacks.tracker.withLock { $0.uncommitted() } }

    /// The broker's committed offsets for these partitions (blocking; for tests and tools).
    func committedOffsets(_ partitions: [TopicPartition], timeout: Duration) throws -> [TopicPartition: Int64] {
        try PartitionList(partitions.map { ($0, nil) }).withList { list in
            let result = rd_kafka_committed(handle, list, milliseconds(timeout))
            guard result == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("cannot read committed offsets", error: result) }
            var offsets: [TopicPartition: Int64] = [:]
            for (partition, offset, _) in PartitionList.entries(of: list) { offsets[partition] = offset }
            return offsets
        }
    }
}

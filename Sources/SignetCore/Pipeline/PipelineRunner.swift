public import Logging
import Synchronization

/// Runs a ``Pipeline``: reads batches, passes them through the stages, delivers the
/// outputs, and commits source positions only after every sink acknowledged.
///
/// Each stage runs in its own task and hands batches to the next through a `RecordQueue`,
/// so verification of one batch overlaps state updates of the previous one while memory
/// stays bounded. Batches queued behind a busy step merge, so batch size follows load:
/// single records at a trickle, full batches under a backlog. A small batch whose later
/// steps are all idle is carried through them by the stage that has it, on its thread,
/// instead of waking each (`StepOccupancy`). Delivery and commits happen strictly in
/// source order, one batch at a time.
public final class PipelineRunner: Sendable {
    /// The pipeline it runs, as given: what a stage leaves out because of another one is
    /// decided where the pipeline is built (``ComponentContext/laterStage(declares:)``).
    public let pipeline: Pipeline
    private let logger: Logger
    private let summary = Mutex(RunSummary())
    private let latencies = Mutex(LatencyHistogram())
    private let started = Mutex<ContinuousClock.Instant?>(nil)
    /// Counters and histograms (docs/operations.md); no-ops unless a metrics backend is set.
    public let metrics: PipelineMetrics
    /// The phase `/readyz` reports: starting, running, draining, stopped.
    public let health: PipelineHealth
    /// Where the runner's own calls into components run, since they may block (a store's
    /// open, a delivery mark's transaction, a close): opening and closing, the stages'
    /// acknowledgements and the outbox redelivery. Never the cooperative pool.
    private let housekeeping = BlockingExecutor(label: "signet.runner")

    /// A runner of `pipeline`, logging to `logger`, counting with `metrics`, its phase in `health`.
    public init(
        pipeline: Pipeline, logger: Logger = Logger(label: "signet"), metrics: PipelineMetrics = PipelineMetrics(),
        health: PipelineHealth = PipelineHealth()
    ) {
        self.pipeline = pipeline
        self.logger = logger
        self.metrics = metrics
        self.health = health
        metrics.registerReasons(pipeline.reasonCodes)
    }

    /// The counts so far (safe to call while running).
    public var currentSummary: RunSummary {
        var current = summary.withLock { $0 }
        if let started = started.withLock({ $0 }) {
            current.elapsedSeconds = (ContinuousClock.now - started).seconds
        }
        current.latency = latencies.withLock { $0.summary }
        return current
    }

    /// Asks the source to stop; in-flight batches drain, are delivered and committed,
    /// then ``run()`` returns. A stage that holds a batch on an outside wait ends it
    /// (``Stage/stopRequested()``), and the run then throws with that batch uncommitted.
    public func requestStop() async {
        health.enter(.draining)
        for stage in pipeline.stages { stage.stopRequested() }
        await pipeline.source.stop()
    }

    /// Runs until the source is exhausted or stopped. Throws when a stage or sink fails
    /// for good; whatever was not committed is read again by the next run.
    @discardableResult
    public func run() async throws -> RunSummary {
        try pipeline.checkWiring()
        started.withLock { $0 = .now }
        var opened: [@Sendable () async throws -> Void] = []
        do {
            // Resources first (stages use them from open() on), closed last.
            for named in pipeline.resources {
                try await withTaskExecutorPreference(housekeeping) { try await named.resource.open() }
                opened.append(named.resource.close)
                // Said at start like the verify stage's settings: a wrong database is a misconfiguration too.
                logger.info("store \(named.name) (\(named.type)): \(named.resource.summary ?? named.resource.identity ?? "open")")
            }
            try await pipeline.source.open()
            opened.append(pipeline.source.close)
            for stage in pipeline.stages {
                try await withTaskExecutorPreference(housekeeping) { try await stage.open() }
                opened.append(stage.close)
            }
            for named in pipeline.sinks {
                try await named.sink.open()
                opened.append(named.sink.close)
            }
            try await pipeline.deadLetter.sink.open()
            opened.append(pipeline.deadLetter.sink.close)

            try await redeliverOutbox()
            health.enter(.running)
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let interval = pipeline.settings.progressInterval {
                    group.addTask { [self] in try await reportProgress(every: interval) }
                }
                try await runStages(in: &group)
                group.cancelAll()
            }
        } catch {
            health.enter(.stopped)
            for case let uncommitted as UncommittedPositions in await closeAll(opened.reversed()) {
                logger.error("\(uncommitted)")
            }
            // A permanent sink error (closed stdout, full disk) is one line the caller prints;
            // repeating it here at error level would bury that line.
            let level: Logger.Level = (error as? SinkError)?.isPermanent == true ? .debug : .error
            logger.log(level: level, "pipeline stopped: \(error)", metadata: ["progress": "\(currentSummary)"])
            throw error
        }
        health.enter(.draining)
        let closeFailures = await closeAll(opened.reversed())
        health.enter(.stopped)
        // Everything else is closed; a source that could not commit finished work says so.
        if let uncommitted = closeFailures.lazy.compactMap({ $0 as? UncommittedPositions }).first {
            logger.error("\(uncommitted)")
            throw uncommitted
        }
        let final = currentSummary
        summary.withLock { $0.elapsedSeconds = final.elapsedSeconds }
        return final
    }

    /// The most records a stage carries through the later steps itself when they are idle
    /// (``StepOccupancy``): the webhook's trickle, not a bulk batch, whose stages overlap better
    /// on their own threads.
    static let carryLimit = 16

    private func runStages(in group: inout ThrowingTaskGroup<Void, any Error>) async throws {
        let stages = pipeline.stages
        let batchSize = pipeline.settings.batchSize
        // queues[i] feeds stage i; the last one feeds delivery.
        let source = pipeline.source
        // A push source's queue is the first stage's input (no pump between two queues); with
        // no stage to take from it, it is pulled like any other.
        let push = stages.isEmpty ? nil : source as? any PushSource
        let queues = (0...stages.count).map { index in
            (index == 0 ? push?.input : nil) ?? RecordQueue<Record>(capacity: batchSize)
        }
        let occupancy = StepOccupancy(steps: stages.count + 1)
        let tickers = stages.map(StageTicker.init)
        let executors = stages.map { BlockingExecutor(label: "signet.stage.\($0.name)") }

        /// Records read from the source: counted, and the batch's read instant stamped.
        func read(_ records: inout [Record]) {
            summary.withLock { $0.read += records.count }
            metrics.recordsRead(records.count)
            records[0][BatchReadInstantPart.self] = .now
            occupancy.add(records.count, at: 0)
        }

        if push == nil {
            // The source's loop shares the first stage's executor: handing a batch to that stage
            // then wakes no other thread, and a source never blocks its caller (``Source``), so
            // the stage waits for nothing but the hand-off itself.
            group.addTask(executorPreference: executors.first) {
                do {
                    while var records = try await source.nextBatch(maxRecords: batchSize) {
                        guard !records.isEmpty else { continue }
                        read(&records)
                        await queues[0].send(records)
                    }
                    queues[0].finish()
                } catch {
                    queues[0].finish(failure: error)
                    throw error
                }
            }
        }
        for (index, stage) in stages.enumerated() {
            let ticker = tickers[index]
            if let ticker { group.addTask { await ticker.wake(queues[index]) } }
            group.addTask(executorPreference: executors[index]) { [self] in
                /// Queues what this stage made for the next step.
                func passOn(_ records: [Record]) async {
                    guard !records.isEmpty else { return }
                    occupancy.add(records.count, at: index + 1)
                    await queues[index + 1].send(records)
                }
                // The first stage takes a push source's records in batches of the runner's size,
                // lingering as the source asks (what its `nextBatch` would have done).
                let (most, linger): (Int, RecordQueueLinger) = index == 0 && push != nil ? (batchSize, push?.inputLinger ?? .none) : (.max, .none)
                do {
                    while let taken = try await queues[index].take(max: most, linger: linger) {
                        if case .elements(var records) = taken, !records.isEmpty {
                            if index == 0, push != nil { read(&records) }
                            var batch = RecordBatch(records: records)
                            try await stage.process(&batch)
                            FaultInjection.point("after_stage_process")
                            if batch.count <= Self.carryLimit, occupancy.claimSteps(after: index) {
                                defer { endCarry(after: index, occupancy: occupancy, tickers: tickers, queues: queues) }
                                try await carry(batch, after: index)
                            } else {
                                await passOn(batch.records)
                            }
                            if let ticker, let generated = try await ticker.tickIfDue() { await passOn(generated.records) }
                            occupancy.remove(records.count, at: index)
                        } else if let ticker, occupancy.beginOwnWork(at: index) {
                            // Woken for a tick (refused while a stage before carries through this one).
                            if let generated = try await ticker.tickIfDue() { await passOn(generated.records) }
                            occupancy.remove(1, at: index)
                        }
                    }
                    queues[index + 1].finish()
                } catch {
                    queues[index + 1].finish(failure: error)
                    throw error
                }
            }
        }
        do {
            for try await records in queues[stages.count].batches() {
                try await deliver(RecordBatch(records: records))
                occupancy.remove(records.count, at: stages.count)
            }
        } catch {
            // A stage or the delivery failed: the source stops reading, or a source that polls
            // (Kafka) would read on while the cancelled steps refuse its batches.
            await source.stop()
            throw error
        }
    }

    /// The short path: stage `index`'s task runs the later stages and the delivery of `batch`
    /// itself, on its own thread, while their tasks are idle (``StepOccupancy``). The source
    /// keeps reading into the first queue meanwhile, so what arrives now merges into the next
    /// batch. Order holds: the later steps held nothing, so every earlier batch is delivered.
    private func carry(_ batch: RecordBatch, after index: Int) async throws {
        var batch = batch
        for stage in pipeline.stages[(index + 1)...] {
            try await stage.process(&batch)
            FaultInjection.point("after_stage_process")
        }
        try await deliver(batch, onBlockingThread: true)
    }

    /// After a carry: a carried stage whose tick came due meanwhile (its task was refused the
    /// work) is woken to do it now.
    private func endCarry(after index: Int, occupancy: StepOccupancy, tickers: [StageTicker?], queues: [RecordQueue<Record>]) {
        occupancy.release()
        for later in (index + 1)..<tickers.count where tickers[later]?.isDue == true {
            queues[later].wake()
        }
    }

    /// Delivers what stages committed in an earlier run but never saw acknowledged.
    /// Such records pass through the stages after the one that produced them (a
    /// fan-out still routes them), then go to the sinks; the source is not committed.
    private func redeliverOutbox() async throws {
        let stages = pipeline.stages
        for (index, stage) in stages.enumerated() {
            let found = try await withTaskExecutorPreference(housekeeping) { () async throws -> RecordBatch? in
                guard var batch = try await stage.undeliveredOutputs(), batch.count > 0 else { return nil }
                batch.isRedelivery = true
                for later in stages[(index + 1)...] {
                    try await later.process(&batch)
                }
                return batch
            }
            guard let batch = found else { continue }
            logger.notice(
                "delivering \(batch.count) records that an earlier run committed but did not deliver",
                metadata: ["stage": "\(stage.name)"])
            try await deliver(batch)
        }
    }

    /// Delivers one batch: plan, write, commit. The commit rule in one place: stages
    /// acknowledge and the source commits only after every sink acknowledged its messages
    /// and the dead-letter sink acknowledged every reject and every message a sink refused
    /// for good. Any failure before that throws, and the batch is read again next run.
    /// `onBlockingThread`: the caller runs on a stage's own thread (a carry), where the stages'
    /// acknowledgements may block without a hop to the housekeeping thread.
    private func deliver(_ batch: RecordBatch, onBlockingThread: Bool = false) async throws {
        let plan = DeliveryPlan(
            batch: batch, sinkNames: pipeline.sinks.map(\.name), sinkInputs: pipeline.sinks.map(\.sink.input),
            deadLetter: pipeline.deadLetter)
        if logger.logLevel <= .debug {
            for record in batch.records {
                if case .rejected(let rejection, _) = record.status { logger.debug("rejected \(record.position): \(rejection)") }
            }
        }

        // Write: every sink its share, and the rejects to the dead-letter sink, at once (one
        // write alone, the common case at a trickle, needs no child task).
        let refusals: [[UndeliverableMessages.Refusal]]
        if plan.deadLetters.isEmpty, plan.shares.count <= 1 {
            var written: [[UndeliverableMessages.Refusal]] = []
            for share in plan.shares { written.append(try await write(share)) }
            refusals = written
        } else {
            refusals = try await writeConcurrently(plan)
        }
        let settlement = plan.settle(refusals: refusals)
        if !settlement.refusedDeadLetters.isEmpty {
            // A sink refused these for good (e.g. HTTP 4xx): their records are dead-lettered before the commit.
            try await writeDeadLetters(settlement.refusedDeadLetters)
            for message in settlement.refusedDeadLetters {
                metrics.deadLettered(reason: message.header(.reason) ?? "unknown")
            }
        }
        FaultInjection.point("after_sink_write")

        // Commit: stages first (their outbox marks), then the source.
        if onBlockingThread {
            for stage in pipeline.stages { try await stage.acknowledge(batch) }
        } else {
            try await withTaskExecutorPreference(housekeeping) {
                for stage in pipeline.stages { try await stage.acknowledge(batch) }
            }
        }
        FaultInjection.point("after_acknowledge")
        metrics.eventsPublished(settlement.publishedEventTypes)
        if batch.isRedelivery {
            // Already counted when first processed; only its deliveries are new.
            summary.withLock {
                $0.redelivered += settlement.delivered
                $0.delivered += settlement.delivered
                $0.deliveredBySink.merge(settlement.deliveredBySink, uniquingKeysWith: +)
            }
            return
        }
        let outcomes = plan.outcomes
        if !outcomes.isEmpty { try await pipeline.source.commit(outcomes: outcomes) }
        FaultInjection.point("after_source_commit")
        let committedAt = WallClock.milliseconds()
        latencies.withLock { histogram in
            for record in batch.records {
                if let written = record.sourceTimestamp { histogram.record(committedAt - written) }
            }
        }
        var counts = plan.counts
        counts.delivered = settlement.delivered
        counts.deliveredBySink = settlement.deliveredBySink
        summary.withLock { $0.add(counts) }
        metrics.batchCommitted(
            batch, sourceRecords: plan.outcomes.count, counts: counts, committedAtMilliseconds: committedAt)
        logger.debug(
            "batch committed",
            metadata: [
                "records": "\(batch.count)", "passed": "\(counts.passed)", "rejected": "\(counts.rejected)",
                "dropped": "\(counts.dropped)", "delivered": "\(counts.delivered)",
                "first": "\(batch.records.first?.position.description ?? "-")",
                "last": "\(batch.records.last?.position.description ?? "-")",
            ])
    }

    /// Writes every sink's share and the rejects at once; what each sink refused, by share.
    private func writeConcurrently(_ plan: DeliveryPlan) async throws -> [[UndeliverableMessages.Refusal]] {
        try await withThrowingTaskGroup(of: (Int, [UndeliverableMessages.Refusal]).self) { group in
            for (index, share) in plan.shares.enumerated() {
                group.addTask { [self] in (index, try await write(share)) }
            }
            if !plan.deadLetters.isEmpty {
                group.addTask { [self] in
                    try await writeDeadLetters(plan.deadLetters)
                    return (-1, [])
                }
            }
            var refusals = Array(repeating: [UndeliverableMessages.Refusal](), count: plan.shares.count)
            for try await (index, refused) in group where index >= 0 { refusals[index] = refused }
            return refusals
        }
    }

    /// Writes one sink's share of a batch.
    private func write(_ share: DeliveryPlan.Share) async throws -> [UndeliverableMessages.Refusal] {
        let named = pipeline.sinks[share.sink]
        return try await write(share.messages, to: named.sink, name: named.name)
    }

    /// Writes to the dead-letter sink. It is the last place a record can go, so a refusal
    /// there (an `http` dead-letter sink answering 4xx) is not dropped: it fails the run
    /// before the commit, and the next run reads the batch again.
    private func writeDeadLetters(_ messages: [OutputMessage]) async throws {
        let refused = try await write(messages, to: pipeline.deadLetter.sink, name: "dead_letter")
        guard let first = refused.first else { return }
        throw SinkError(
            "the dead-letter sink refused \(refused.count) of \(messages.count) records for good (first: \(first.rejection)); "
                + "stopped before the commit: the next run reads them again",
            isPermanent: true)
    }

    /// Writes to one sink, retrying with capped exponential backoff while the sink fails,
    /// up to the configured retry timeout; nothing is committed until it succeeds.
    /// Returns the messages the sink refused for good (``UndeliverableMessages``).
    private func write(_ messages: [OutputMessage], to sink: any Sink, name: String) async throws
        -> [UndeliverableMessages.Refusal]
    {
        let deadline = ContinuousClock.now + pipeline.settings.sinkRetryTimeout
        var backoff = Duration.milliseconds(100)
        var attempt = 1
        while true {
            do {
                try await sink.write(messages)
                if attempt > 1 { logger.notice("sink '\(name)' recovered after \(attempt) attempts") }
                metrics.sinkDelivered(name, count: messages.count)
                return []
            } catch let undeliverable as UndeliverableMessages {
                metrics.sinkFailed(name, willRetry: false)
                metrics.sinkDelivered(name, count: messages.count - undeliverable.refusals.count)
                logger.warning("sink '\(name)' refused \(undeliverable.refusals.count) messages for good")
                return undeliverable.refusals
            } catch {
                let permanent = (error as? SinkError)?.isPermanent ?? false
                let willRetry = !permanent && ContinuousClock.now + backoff < deadline && !Task.isCancelled
                metrics.sinkFailed(name, willRetry: willRetry)
                guard willRetry else {
                    logger.log(
                        level: permanent ? .debug : .error,
                        "sink '\(name)' failed, giving up after \(attempt) attempts: \(error)")
                    throw error
                }
                logger.warning("sink '\(name)' failed (attempt \(attempt)), retrying in \(backoff): \(error)")
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
                attempt += 1
            }
        }
    }

    private func reportProgress(every interval: Duration) async throws {
        var previous = currentSummary
        while true {
            try await Task.sleep(for: interval)
            let now = currentSummary
            let rate = Double(now.read - previous.read) / max(interval.seconds, 0.001)
            var line = "progress: \(now.read) read, \(now.passed) passed, \(now.rejected) rejected, \(now.dropped) dropped, \(now.delivered) delivered (\(Int(rate))/s)"
            if let latency = now.latency { line += ", latency p99 \(latency.p99Milliseconds) ms" }
            logger.info("\(line)")
            previous = now
        }
    }

    /// Closes each in turn whatever the others do; returns what failed.
    @discardableResult
    private func closeAll(_ closers: [@Sendable () async throws -> Void]) async -> [any Error] {
        var failures: [any Error] = []
        for close in closers {
            do {
                try await withTaskExecutorPreference(housekeeping) { try await close() }
            } catch let error as UncommittedPositions {
                failures.append(error)
            } catch {
                logger.warning("error while closing: \(error)")
                failures.append(error)
            }
        }
        return failures
    }
}

extension Duration {
    /// The duration in seconds as a Double.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

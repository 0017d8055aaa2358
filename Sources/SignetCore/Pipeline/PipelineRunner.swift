import Logging
import Synchronization

/// Runs a ``Pipeline``: reads batches, passes them through the stages, delivers the
/// outputs, and commits source positions only after every sink acknowledged.
///
/// Each stage runs in its own task and hands batches to the next through a ``BatchHandoff``,
/// so verification of one batch overlaps state updates of the previous one while memory
/// stays bounded. Batches queued behind a busy step merge, so batch size follows load:
/// single records at a trickle, full batches under a backlog. Delivery and commits
/// happen strictly in source order, one batch at a time.
public final class PipelineRunner: Sendable {
    public let pipeline: Pipeline
    private let logger: Logger
    private let summary = Mutex(RunSummary())
    private let latencies = Mutex(LatencyHistogram())
    private let started = Mutex<ContinuousClock.Instant?>(nil)

    public init(pipeline: Pipeline, logger: Logger = Logger(label: "signet")) {
        self.pipeline = pipeline
        self.logger = logger
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
    /// then ``run()`` returns.
    public func requestStop() async {
        await pipeline.source.stop()
    }

    /// Runs until the source is exhausted or stopped. Throws when a stage or sink fails
    /// for good; whatever was not committed is read again by the next run.
    @discardableResult
    public func run() async throws -> RunSummary {
        started.withLock { $0 = .now }
        var opened: [@Sendable () async throws -> Void] = []
        do {
            try await pipeline.source.open()
            opened.append(pipeline.source.close)
            for stage in pipeline.stages {
                try await stage.open()
                opened.append(stage.close)
            }
            for named in pipeline.sinks {
                try await named.sink.open()
                opened.append(named.sink.close)
            }
            try await pipeline.deadLetter.sink.open()
            opened.append(pipeline.deadLetter.sink.close)

            try await redeliverOutbox()
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let interval = pipeline.settings.progressInterval {
                    group.addTask { [self] in try await reportProgress(every: interval) }
                }
                try await runStages(in: &group)
                group.cancelAll()
            }
        } catch {
            await closeAll(opened.reversed())
            logger.error("pipeline stopped: \(error)", metadata: ["progress": "\(currentSummary)"])
            throw error
        }
        await closeAll(opened.reversed())
        let final = currentSummary
        summary.withLock { $0.elapsedSeconds = final.elapsedSeconds }
        return final
    }

    private func runStages(in group: inout ThrowingTaskGroup<Void, any Error>) async throws {
        let stages = pipeline.stages
        let batchSize = pipeline.settings.batchSize
        let handoffs = (0...stages.count).map { _ in BatchHandoff(capacity: batchSize) }
        let source = pipeline.source

        group.addTask { [self] in
            do {
                while let records = try await source.nextBatch(maxRecords: batchSize) {
                    guard !records.isEmpty else { continue }
                    summary.withLock { $0.read += records.count }
                    await handoffs[0].send(RecordBatch(records: records))
                }
                handoffs[0].finish()
            } catch {
                handoffs[0].fail(error)
                throw error
            }
        }
        for (index, stage) in stages.enumerated() {
            group.addTask(executorPreference: StageExecutor(label: "signet.stage.\(stage.name)")) {
                do {
                    while var batch = try await handoffs[index].next() {
                        try await stage.process(&batch)
                        FaultInjection.point("after_stage_process")
                        await handoffs[index + 1].send(batch)
                    }
                    handoffs[index + 1].finish()
                } catch {
                    handoffs[index + 1].fail(error)
                    throw error
                }
            }
        }
        do {
            while let batch = try await handoffs[stages.count].next() {
                try await deliver(batch)
            }
        } catch {
            await source.stop()
            throw error
        }
    }

    /// Delivers what stages committed in an earlier run but never saw acknowledged.
    /// Such records pass through the stages after the one that produced them (a
    /// fan-out still routes them), then go to the sinks; the source is not committed.
    private func redeliverOutbox() async throws {
        let stages = pipeline.stages
        for (index, stage) in stages.enumerated() {
            guard var batch = try await stage.undeliveredOutputs(), batch.count > 0 else { continue }
            logger.notice(
                "delivering \(batch.count) records that an earlier run committed but did not deliver",
                metadata: ["stage": "\(stage.name)"])
            batch.isRedelivery = true
            for later in stages[(index + 1)...] {
                try await later.process(&batch)
            }
            try await deliver(batch)
        }
    }

    /// Writes a batch's outputs and rejects, then acknowledges and commits it.
    private func deliver(_ batch: RecordBatch) async throws {
        var perSink = Array(repeating: [OutputMessage](), count: pipeline.sinks.count)
        var deadLetters: [OutputMessage] = []
        var counts = RunSummary()
        for record in batch.records {
            switch record.status {
            case .active:
                counts.passed += 1
                for message in record.outputs {
                    for (index, named) in pipeline.sinks.enumerated() where message.isRouted(to: named.name) {
                        perSink[index].append(message)
                    }
                }
            case .rejected(let rejection, let stage):
                counts.rejected += 1
                counts.rejectedByReason[rejection.reason.rawValue, default: 0] += 1
                deadLetters.append(pipeline.deadLetter.message(for: record, rejection: rejection, stage: stage))
                logger.debug("rejected \(record.position): \(rejection)")
            case .dropped(let reason):
                counts.dropped += 1
                counts.droppedByReason[reason, default: 0] += 1
            }
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, named) in pipeline.sinks.enumerated() where !perSink[index].isEmpty {
                let messages = perSink[index]
                group.addTask { [self] in try await write(messages, to: named.sink, name: named.name) }
                counts.deliveredBySink[named.name, default: 0] += messages.count
                counts.delivered += messages.count
            }
            if !deadLetters.isEmpty {
                let messages = deadLetters
                group.addTask { [self] in try await write(messages, to: pipeline.deadLetter.sink, name: "dead_letter") }
            }
            try await group.waitForAll()
        }

        FaultInjection.point("after_sink_write")
        for stage in pipeline.stages {
            try await stage.acknowledge(batch)
        }
        FaultInjection.point("after_acknowledge")
        if batch.isRedelivery {
            summary.withLock {
                $0.redelivered += counts.delivered
                $0.delivered += counts.delivered
                $0.deliveredBySink.merge(counts.deliveredBySink, uniquingKeysWith: +)
            }
            return
        }
        try await pipeline.source.commit(batch.records.map(\.position))
        FaultInjection.point("after_source_commit")
        let committedAt = WallClock.milliseconds()
        latencies.withLock { histogram in
            for record in batch.records {
                if let written = record.sourceTimestamp { histogram.record(committedAt - written) }
            }
        }
        summary.withLock { $0.add(counts) }
    }

    /// Writes to one sink, retrying with capped exponential backoff while the sink fails,
    /// up to the configured retry timeout; nothing is committed until it succeeds.
    private func write(_ messages: [OutputMessage], to sink: any Sink, name: String) async throws {
        let deadline = ContinuousClock.now + pipeline.settings.sinkRetryTimeout
        var backoff = Duration.milliseconds(100)
        var attempt = 1
        while true {
            do {
                try await sink.write(messages)
                if attempt > 1 { logger.notice("sink '\(name)' recovered after \(attempt) attempts") }
                return
            } catch {
                let permanent = (error as? SinkError)?.isPermanent ?? false
                guard !permanent, ContinuousClock.now + backoff < deadline, !Task.isCancelled else {
                    logger.error("sink '\(name)' failed, giving up after \(attempt) attempts: \(error)")
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

    private func closeAll(_ closers: [@Sendable () async throws -> Void]) async {
        for close in closers {
            do { try await close() } catch { logger.warning("error while closing: \(error)") }
        }
    }
}

extension Duration {
    /// The duration in seconds as a Double.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

import Foundation
import Synchronization
import SignetTestSupport
import Testing

@testable import SignetCore

enum TenantKey: RecordPartKey { typealias Value = String }

/// What an embedding service would write: tags each record with its tenant.
struct TagTenantStage: RecordStage {
    let name = "tag_tenant"
    let tenant: String
    func process(record: inout Record) throws(RecordRejection) {
        if record.raw.isEmpty { throw RecordRejection("empty_line", "nothing to tag") }
        record[TenantKey.self] = tenant
        record.outputs.append(OutputMessage(value: record.raw, headers: [.init("tenant", tenant)]))
    }
}

/// Emits one message per route: to `a` only, to `b` only, and to every sink.
struct RoutingStage: RecordStage {
    let name = "route"
    func process(record: inout Record) throws(RecordRejection) {
        let text = String(decoding: record.raw, as: UTF8.self)
        record.outputs.append(OutputMessage(value: Array("\(text)->a".utf8), routes: ["a"]))
        record.outputs.append(OutputMessage(value: Array("\(text)->b".utf8), routes: ["b"]))
        record.outputs.append(OutputMessage(value: Array("\(text)->all".utf8)))
    }
}

final class RunnerBox: Sendable {
    let runner = Mutex<PipelineRunner?>(nil)
}

struct FailingOpenSink: Sink {
    func open() async throws { throw TestFailure("cannot connect") }
    func write(_ messages: [OutputMessage]) async throws {}
}

@Suite("PipelineRunner", .timeLimit(.minutes(10)))
struct PipelineRunnerTests {
    func lines(_ count: Int) -> [String] { (1...count).map { "r\($0)" } }

    /// Stages may block in every call (a store's open, a delivery mark's transaction), so the
    /// runner makes none of them from Swift's cooperative pool: process on the stage's own
    /// executor, the rest on the runner's.
    @Test func noStageCallRunsOnTheCooperativePool() async throws {
        let probe = ExecutorProbeStage()
        let pipeline = try Pipeline(
            source: MemorySource(lines: lines(5)), stages: [probe, CheckStage()], sinks: [NamedSink(name: "out", sink: CaptureSink())],
            deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead")), settings: testSettings(batchSize: 2))
        _ = try await PipelineRunner(pipeline: pipeline).run()
        let calls = probe.executors
        // Five records in batches of two: three batches, each processed and acknowledged.
        #expect(calls.prefix(2).map(\.call) == ["open", "undeliveredOutputs"] && calls.last?.call == "close", "\(calls)")
        #expect(calls.filter { $0.call == "process" }.count == 3 && calls.filter { $0.call == "acknowledge" }.count == 3, "\(calls)")
        for call in calls {
            #expect(call.executor != nil, "\(call.call) ran on the cooperative pool")
        }
        #expect(calls.filter { $0.call == "process" }.allSatisfy { $0.executor == "signet.stage.probe" }, "\(calls)")
    }

    @Test func outputsRejectsAndDropsEndToEnd() async throws {
        let source = MemorySource(lines: ["a", "bad1", "dup", "b", "bad2", "c"])
        let out = CaptureSink(name: "out")
        let dead = CaptureSink(name: "dead")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: dead), settings: testSettings(batchSize: 4))
        let summary = try await PipelineRunner(pipeline: pipeline).run()

        #expect(out.values == ["out:a", "out:b", "out:c"])
        #expect(out.messages.map { text($0.key ?? []) } == ["1", "4", "6"])
        let rejects = try dead.jsonObjects()
        #expect(rejects.count == 2)
        #expect(rejects.map { $0["reason"] as? String } == ["test_bad", "test_bad"])
        #expect(rejects.map { $0["detail"] as? String } == ["line says bad: bad1", "line says bad: bad2"])
        #expect(rejects.map { $0["stage"] as? String } == ["check", "check"])
        #expect(rejects.map { ($0["source"] as? [String: Any])?["stream"] as? String } == ["mem", "mem"])
        #expect(rejects.map { ($0["source"] as? [String: Any])?["line"] as? Int } == [2, 5])
        #expect(rejects.map { $0["input"] as? String } == ["bad1", "bad2"])
        #expect(rejects.map { $0["inputBytes"] as? Int } == [4, 4])
        #expect(rejects.allSatisfy { $0["truncated"] == nil && $0["rejectedAt"] is String })
        #expect(dead.messages.first?.headers.first { $0.name == "signet-reason" }?.value == Array("test_bad".utf8))

        // Dropped record 3 produced nothing but is committed like everything else.
        #expect(source.committedOffsets == [1, 2, 3, 4, 5, 6])
        #expect(source.commits.map(\.count) == [4, 2])
        #expect(summary.read == 6)
        #expect(summary.passed == 3)
        #expect(summary.rejected == 2)
        #expect(summary.dropped == 1)
        #expect(summary.delivered == 3)
        #expect(summary.rejectedByReason == ["test_bad": 2])
        #expect(summary.droppedByReason == ["duplicate": 1])
        #expect(summary.deliveredBySink == ["out": 3])
        #expect(summary.redelivered == 0)
        #expect(source.openCount == 1 && source.closeCount == 1)
        #expect(out.openCount == 1 && out.closeCount == 1)
        #expect(dead.openCount == 1 && dead.closeCount == 1)
    }

    @Test func rawDeadLetterKeepsBytesAndHeaders() async throws {
        let invalid: [UInt8] = [0x62, 0x61, 0x64, 0xFF, 0xFE, 0x00, 0x0A]
        let source = MemorySource(rawLines: [Array("ok".utf8), invalid], stream: "topic-in")
        let dead = CaptureSink(name: "dead")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(name: "validate")], sinks: [NamedSink(name: "out", sink: CaptureSink())],
            deadLetter: DeadLetterOutput(sink: dead, format: .raw), settings: testSettings())
        try await PipelineRunner(pipeline: pipeline).run()
        #expect(dead.messages.count == 1)
        let message = try #require(dead.messages.first)
        #expect(message.value == invalid)
        #expect(message.key == nil)
        let headers = Dictionary(uniqueKeysWithValues: message.headers.map { ($0.name, text($0.value)) })
        #expect(headers["signet-reason"] == "test_bad")
        #expect(headers["signet-stage"] == "validate")
        #expect(headers["signet-source"] == "topic-in:2")
        #expect(headers["signet-detail"]?.hasPrefix("line says bad: bad") == true)
        #expect(source.committedOffsets == [1, 2])
    }

    @Test func commitsFollowSinkWritesAndAcknowledgementsInSourceOrder() async throws {
        let log = EventLog()
        let source = MemorySource(lines: ["r1", "r2", "bad3", "dup4", "r5", "r6", "r7"], log: log)
        let out = CaptureSink(name: "out", log: log)
        let dead = CaptureSink(name: "dead", log: log)
        let tracker = LoggingStage(name: "L", log: log)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), tracker], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: dead), settings: testSettings(batchSize: 2))
        try await PipelineRunner(pipeline: pipeline).run()

        let events = log.events
        let commits = events.filter { $0.hasPrefix("commit:") }
        #expect(commits == ["commit:1,2", "commit:3,4", "commit:5,6", "commit:7"])
        func position(_ event: String) -> Int {
            guard let index = events.firstIndex(of: event) else {
                Issue.record("missing event \(event) in \(events)")
                return -1
            }
            return index
        }
        // Each batch: outputs written, then every stage acknowledged, then the source commits.
        for (written, ack, commit) in [
            ("write out:1,2", "ack L:1,2", "commit:1,2"),
            ("write out:5,6", "ack L:5,6", "commit:5,6"),
            ("write out:7", "ack L:7", "commit:7"),
        ] {
            #expect(position(written) < position(ack), "\(written) before \(ack)")
            #expect(position(ack) < position(commit), "\(ack) before \(commit)")
        }
        // The batch with a reject and a drop: dead letter written before its ack and commit; no output.
        let deadWrite = try #require(events.firstIndex { $0.hasPrefix("write dead:") })
        #expect(deadWrite < position("ack L:3,4"))
        #expect(position("ack L:3,4") < position("commit:3,4"))
        #expect(!events.contains { $0.hasPrefix("write out:3") || $0.hasPrefix("write out:4") })
        // Commits in source order, each after the previous one.
        #expect(position("commit:1,2") < position("commit:3,4"))
        #expect(position("commit:3,4") < position("commit:5,6"))
        #expect(tracker.acknowledgedBatches.map { $0.records.map(\.position.offset) } == [[1, 2], [3, 4], [5, 6], [7]])
        #expect(tracker.acknowledgedBatches.allSatisfy { !$0.isRedelivery })
    }

    @Test func flakySinkIsRetriedAndNothingIsLost() async throws {
        let log = EventLog()
        let source = MemorySource(lines: lines(5), log: log)
        let out = CaptureSink(name: "out", log: log, failTimes: 2)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 10))
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(out.attempts == 3)
        #expect(out.values == lines(5).map { "out:\($0)" })
        #expect(source.committedOffsets == [1, 2, 3, 4, 5])
        #expect(summary.delivered == 5)
        let relevant = log.events.filter { !$0.hasPrefix("read:") }
        #expect(relevant == ["fail out:1,2,3,4,5", "fail out:1,2,3,4,5", "write out:1,2,3,4,5", "commit:1,2,3,4,5"])
    }

    @Test func sinkThatKeepsFailingStopsTheRunWithoutCommittingItsBatch() async throws {
        let log = EventLog()
        let source = MemorySource(lines: lines(6), log: log)
        let out = CaptureSink(name: "out", log: log, poison: { text($0.value) == "out:r3" })
        let tracker = LoggingStage(name: "L", log: log)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), tracker], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings(batchSize: 2, sinkRetryTimeout: .milliseconds(1)))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(source.commits.map { $0.map(\.offset) } == [[1, 2]])
        #expect(out.values == ["out:r1", "out:r2"])
        #expect(tracker.acknowledgedBatches.map { $0.records.map(\.position.offset) } == [[1, 2]])
        #expect(log.events.contains("fail out:3,4"))
        #expect(!log.events.contains("commit:3,4"))
        // Everything opened is closed again.
        #expect(source.closeCount == 1)
        #expect(out.closeCount == 1)
    }

    @Test func deadLetterSinkThatKeepsFailingStopsTheRunToo() async throws {
        let source = MemorySource(lines: ["r1", "bad2", "r3"])
        let out = CaptureSink(name: "out")
        let dead = CaptureSink(name: "dead", failTimes: .max)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: dead),
            settings: testSettings(batchSize: 1, sinkRetryTimeout: .milliseconds(1)))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(source.committedOffsets == [1])
    }

    @Test func stageInfrastructureFailureStopsTheRunUncommitted() async throws {
        let log = EventLog()
        let source = MemorySource(lines: lines(8), log: log)
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), LoggingStage(name: "db", log: log, failOnBatchContaining: 3)],
            sinks: [NamedSink(name: "out", sink: out)], deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings(batchSize: 2))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(source.commits.map { $0.map(\.offset) } == [[1, 2]])
        #expect(out.values == ["out:r1", "out:r2"])
        #expect(source.closeCount == 1)
    }

    @Test func failingSinkOpenClosesWhatWasOpened() async throws {
        let source = MemorySource(lines: lines(3))
        let good = CaptureSink(name: "good")
        let pipeline = try Pipeline(
            source: source, stages: [],
            sinks: [NamedSink(name: "good", sink: good), NamedSink(name: "bad", sink: FailingOpenSink())],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings())
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(source.readCount == 0)
        #expect(source.closeCount == 1)
        #expect(good.closeCount == 1)
        #expect(source.commits.isEmpty)
    }

    @Test func outboxRedeliveryPassesOnlyLaterStagesAndIsNotCommitted() async throws {
        let log = EventLog()
        var old1 = Record(raw: Array("o1".utf8), position: SourcePosition(stream: "mem", offset: 100))
        old1.outputs = [OutputMessage(value: Array("old1".utf8))]
        var old2 = Record(raw: Array("o2".utf8), position: SourcePosition(stream: "mem", offset: 101))
        old2.outputs = [OutputMessage(value: Array("old2".utf8))]
        let outbox = LoggingStage(name: "A", log: log, marker: "+A", outbox: RecordBatch(records: [old1, old2]))
        let later = LoggingStage(name: "B", log: log, marker: "+B")
        let source = MemorySource(lines: ["r1", "r2"], log: log)
        let out = CaptureSink(name: "out", log: log)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), outbox, later], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings())
        let summary = try await PipelineRunner(pipeline: pipeline).run()

        #expect(out.values == ["old1+B", "old2+B", "out:r1+A+B", "out:r2+A+B"])
        let events = log.events
        #expect(events.contains("process B:100,101 (redelivery)"))
        #expect(!events.contains { $0.hasPrefix("process A:100") })
        // Delivered and acknowledged (by every stage) before any new input is read.
        let firstRead = try #require(events.firstIndex { $0.hasPrefix("read:") })
        let redeliveryWrite = try #require(events.firstIndex(of: "write out:old1+B,old2+B"))
        let redeliveryAck = try #require(events.firstIndex(of: "ack A:100,101 (redelivery)"))
        #expect(redeliveryWrite < redeliveryAck)
        #expect(redeliveryAck < firstRead)
        #expect(events.contains("ack B:100,101 (redelivery)"))
        #expect(outbox.acknowledgedBatches.first?.isRedelivery == true)
        // Never committed to the source.
        #expect(source.committedOffsets == [1, 2])
        #expect(!events.contains { $0.hasPrefix("commit:100") })
        #expect(summary.redelivered == 2)
        #expect(summary.delivered == 4)
        #expect(summary.read == 2)
        #expect(summary.passed == 2)
    }

    @Test func manySmallBatchesKeepOrder() async throws {
        let source = MemorySource(lines: lines(1000))
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), CheckStage(name: "check2")], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 3))
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        // Both stages append an output per record.
        let expected = lines(1000).flatMap { ["out:\($0)", "out:\($0)"] }
        #expect(out.values == expected)
        #expect(source.committedOffsets == Array(1...1000))
        #expect(source.commits.count == 334)
        #expect(source.commits.allSatisfy { (1...3).contains($0.count) })
        #expect(summary.read == 1000)
        #expect(summary.passed == 1000)
        #expect(summary.delivered == 2000)
    }

    @Test func parallelRecordStageProcessesEveryRecordExactlyOnce() async throws {
        let source = MemorySource(lines: lines(1000))
        let out = CaptureSink(name: "out")
        let counting = CountingStage(parallelism: 2)
        let pipeline = try Pipeline(
            source: source, stages: [counting], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 100))
        try await PipelineRunner(pipeline: pipeline).run()
        let counts = counting.counts
        #expect(counts.count == 1000)
        #expect(counts.values.allSatisfy { $0 == 1 })
        #expect(Set(counts.keys) == Set(1...1000))
        let prefixes: [String] = out.values.map { value in String(value.prefix { $0 != ":" }) }
        let expected: [String] = (1...1000).map { String($0) }
        #expect(prefixes == expected)
    }

    @Test func routesSelectSinks() async throws {
        let a = CaptureSink(name: "a")
        let b = CaptureSink(name: "b")
        let pipeline = try Pipeline(
            source: MemorySource(lines: ["x", "y"]), stages: [RoutingStage()],
            sinks: [NamedSink(name: "a", sink: a), NamedSink(name: "b", sink: b)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings())
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(a.values == ["x->a", "x->all", "y->a", "y->all"])
        #expect(b.values == ["x->b", "x->all", "y->b", "y->all"])
        #expect(summary.delivered == 8)
        #expect(summary.deliveredBySink == ["a": 4, "b": 4])
    }

    /// A stage failing for good ends the run, also when the source never runs dry: the source
    /// is told to stop, or it would read on while the cancelled steps refuse its batches.
    @Test(.timeLimit(.minutes(1)), arguments: [4, 64])
    func aFailingStageEndsARunWhoseSourceNeverRunsDry(batchSize: Int) async throws {
        let source = MemorySource(endlessStream: "live")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), FailingStage(afterBatches: 3)], sinks: [NamedSink(name: "out", sink: CaptureSink())],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: batchSize))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        // Only the batches before the failed one were committed.
        #expect(source.committedOffsets.count <= 3 * batchSize)
    }

    /// The same for a sink failing for good, with small batches and large.
    @Test(.timeLimit(.minutes(1)), arguments: [4, 64])
    func aFailingSinkEndsARunWhoseSourceNeverRunsDry(batchSize: Int) async throws {
        let source = MemorySource(endlessStream: "live")
        let out = CaptureSink(name: "out", poison: { String(decoding: $0.value, as: UTF8.self) == "out:r10" })
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings(batchSize: batchSize, sinkRetryTimeout: .milliseconds(300)))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        // The batch with r10 and everything after it stays uncommitted.
        #expect(source.committedOffsets.allSatisfy { $0 < 10 })
    }

    @Test func requestStopDrainsDeliversAndCommitsInFlightBatches() async throws {
        let box = RunnerBox()
        let source = MemorySource(endlessStream: "live")
        let out = CaptureSink(name: "out", onWrite: { total in
            if total >= 50, let runner = box.runner.withLock({ $0 }) { await runner.requestStop() }
        })
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 7))
        let runner = PipelineRunner(pipeline: pipeline)
        box.runner.withLock { $0 = runner }
        let summary = try await runner.run()
        let read = source.readCount
        #expect(read >= 50)
        #expect(summary.read == read)
        #expect(out.values.count == read)
        #expect(source.committedOffsets == (1...read).map { Int64($0) })
        #expect(runner.currentSummary.passed == read)
    }

    /// An embedder's stage, declared as the built-in ones are.
    static let tagTenant = ComponentSpec(
        name: "tag_tenant", summary: "adds the tenant header", fields: [ConfigField("tenant", .string, .required, "the tenant")])

    @Test func customComponentsRegisteredByAnEmbedderRunFromYAML() async throws {
        let source = MemorySource(lines: ["one", "", "two"])
        let out = CaptureSink(name: "out")
        let dead = CaptureSink(name: "dead")
        var registry = coreRegistry()
        registry.registerSource(ComponentSpec(name: "memory", summary: "test input", fields: [ConfigField("name", .string, .required, "fixture")])) { config, _ in
            guard try config.string("name") == "fixture" else { throw config.error("wrong name", key: "name") }
            return source
        }
        registry.registerSink(ComponentSpec(name: "capture", summary: "test output", fields: [ConfigField("which", .string, .required, "out or dead")])) { config, _ in
            try config.string("which") == "dead" ? dead : out
        }
        registry.registerStage(Self.tagTenant) { config, _ in TagTenantStage(tenant: try config.string("tenant")) }
        let yaml = """
            source: { type: memory, name: fixture }
            stages:
              - type: tag_tenant
                tenant: ${TENANT:acme}
            sinks:
              out: { type: capture, which: out }
            dead_letter: { type: capture, which: dead }
            settings: { batch_size: 2, progress_interval: 0s }
            """
        let pipeline = try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "embed.yaml")
        #expect(pipeline.stages.first is TagTenantStage)
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(out.values == ["one", "two"])
        #expect(out.messages.allSatisfy { $0.headers == [OutputMessage.Header("tenant", "acme")] })
        let rejects = try dead.jsonObjects()
        #expect(rejects.map { $0["reason"] as? String } == ["empty_line"])
        #expect(rejects.map { $0["stage"] as? String } == ["tag_tenant"])
        #expect(summary.read == 3)
        #expect(source.committedOffsets == [1, 2, 3])

        // And the custom stage's own keys are checked like the built-in ones.
        let errors = loadErrors(yaml.replacingOccurrences(of: "tenant: ${TENANT:acme}", with: "tennant: acme"), registry: registry)
        #expect(errors.map(\.message) == [
            "'stages[0]' needs 'tenant' ('tennant' at 4:5 looks like a misspelling of it)",
            "unknown key 'tennant' in 'stages[0]' (did you mean 'tenant'?)",
        ])
    }

    @Test func fileToFilePipelineFromYAMLWithCheckpoint() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        var input = "alpha\n\nbeta\r\n"
        input += String(repeating: "x", count: 3000) + "\n"
        input += "gamma"
        try dir.write("in.ndjson", input)
        var registry = coreRegistry()
        registry.registerStage(Self.tagTenant) { config, _ in TagTenantStage(tenant: try config.string("tenant")) }
        let yaml = """
            source:
              type: file
              path: ${DIR}/in.ndjson
              max_line_bytes: 1024
              checkpoint: ${DIR}/state/in.checkpoint
            stages:
              - { type: tag_tenant, tenant: t1 }
            sinks:
              out: { type: file, path: "${DIR}/out/events.ndjson", fsync: false }
            dead_letter: { type: file, path: "${DIR}/out/dead.ndjson" }
            settings: { batch_size: 2, progress_interval: 0s }
            """
        try FileManager.default.createDirectory(atPath: dir.path("state"), withIntermediateDirectories: true)
        let loader = PipelineLoader(registry: registry, environment: ["DIR": dir.url.path])
        let first = try await PipelineRunner(pipeline: try loader.load(yaml: yaml, file: "p.yaml")).run()
        #expect(first.read == 4)
        #expect(first.passed == 3)
        #expect(first.rejectedByReason == ["line_too_large": 1])
        #expect(text(try dir.read("out/events.ndjson")) == "alpha\nbeta\ngamma\n")
        let deadLines = text(try dir.read("out/dead.ndjson")).split(separator: "\n")
        #expect(deadLines.count == 1)
        let reject = try #require(
            try JSONSerialization.jsonObject(with: Data(deadLines[0].utf8)) as? [String: Any])
        #expect(reject["reason"] as? String == "line_too_large")
        #expect(reject["stage"] as? String == "source")
        #expect((reject["source"] as? [String: Any])?["line"] as? Int == 4)
        // The line's true size, and only its first max_line_bytes kept.
        #expect(reject["inputBytes"] as? Int == 3000)
        #expect(reject["truncated"] as? Bool == true)
        #expect((reject["input"] as? String)?.count == 1024)

        // A second run resumes after the checkpoint: nothing is read or written again.
        let second = try await PipelineRunner(pipeline: try loader.load(yaml: yaml, file: "p.yaml")).run()
        #expect(second.read == 0)
        #expect(text(try dir.read("out/events.ndjson")) == "alpha\nbeta\ngamma\n")
    }
}

/// Hands out one record per call, as a Kafka source does at a trickle.
final class OneAtATimeSource: Source {
    let inner: MemorySource
    init(_ inner: MemorySource) { self.inner = inner }
    func nextBatch(maxRecords: Int) async throws -> [Record]? { try await inner.nextBatch(maxRecords: 1) }
    func commit(_ positions: [SourcePosition]) async throws { try await inner.commit(positions) }
    func stop() async { await inner.stop() }
}

/// Takes its time with every batch and remembers how many records each one had.
final class SlowStage: Stage {
    let name = "slow"
    private let sizes = Mutex<[Int]>([])
    var batchSizes: [Int] { sizes.withLock { $0 } }
    func process(_ batch: inout RecordBatch) async throws {
        sizes.withLock { $0.append(batch.count) }
        try await Task.sleep(for: .milliseconds(5))
    }
}

@Suite("PipelineRunner adaptive batches", .timeLimit(.minutes(10)))
struct AdaptiveBatchTests {
    @Test func recordsQueuedBehindABusyStageTravelTogetherInOrder() async throws {
        let lines = (1...200).map { "r\($0)" }
        let memory = MemorySource(lines: lines)
        let slow = SlowStage()
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: OneAtATimeSource(memory), stages: [CheckStage(), slow], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 16))
        let summary = try await PipelineRunner(pipeline: pipeline).run()

        // The source handed out 200 single records; the slow stage saw them merged, never
        // beyond the batch size, and nothing was lost, repeated or reordered.
        let sizes = slow.batchSizes
        #expect(sizes.reduce(0, +) == 200)
        #expect(sizes.count < 100, "expected merged batches, got \(sizes.count) for 200 records")
        #expect(sizes.allSatisfy { $0 <= 16 }, "\(sizes)")
        #expect(out.values == lines.map { "out:\($0)" })
        #expect(memory.committedOffsets == Array(1...200))
        #expect(memory.commits.count < 100)
        #expect(summary.read == 200)
        #expect(summary.passed == 200)
    }
}

/// Stamps every record as written `age` before it was read, as a Kafka source does.
final class TimestampedSource: Source {
    let inner: MemorySource
    let age: Int64
    init(_ inner: MemorySource, age: Int64) {
        self.inner = inner
        self.age = age
    }
    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        let now = WallClock.milliseconds()
        return try await inner.nextBatch(maxRecords: maxRecords)?.map { record in
            var record = record
            record.sourceTimestamp = now - age
            return record
        }
    }
    func commit(_ positions: [SourcePosition]) async throws { try await inner.commit(positions) }
    func stop() async { await inner.stop() }
}

@Suite("PipelineRunner latency")
struct RunnerLatencyTests {
    @Test func sourceTimestampsGiveEndToEndLatencyInTheSummary() async throws {
        let source = TimestampedSource(MemorySource(lines: ["a", "bad", "b"]), age: 2_000)
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: CaptureSink())],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: 2))
        let started = ContinuousClock.now
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        // Records were read after `started`, 2 s old; a busy machine may stretch the run itself.
        let ceiling = 2_000 + Int64(((ContinuousClock.now - started).seconds * 1_000).rounded(.up)) + 1
        let latency = try #require(summary.latency)
        // Every committed record counts, rejected ones too: their commit waited for the dead letter.
        #expect(latency.count == 3)
        #expect(latency.p50Milliseconds >= 2_000 && latency.maxMilliseconds <= ceiling, "\(latency), ceiling \(ceiling) ms")
        #expect(latency.p99Milliseconds >= latency.p50Milliseconds)
        #expect(latency.maxMilliseconds >= latency.p99Milliseconds)
        #expect(summary.description.contains("latency p50"))
    }

    @Test func sourcesWithoutTimestampsReportNoLatency() async throws {
        let pipeline = try Pipeline(
            source: MemorySource(lines: ["a", "b"]), stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: CaptureSink())],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings())
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(summary.latency == nil)
        #expect(!summary.description.contains("latency"))
    }

    @Test func histogramPercentiles() {
        var histogram = LatencyHistogram()
        #expect(histogram.summary == nil)
        for value in 1...100 { histogram.record(Int64(value)) }
        #expect(histogram.percentile(0.50) == 50)
        #expect(histogram.percentile(0.99) == 99)
        #expect(histogram.percentile(1.0) == 100)
        histogram.record(-5)  // a writer clock ahead of ours
        #expect(histogram.percentile(0.001) == 0)
        // Beyond a second, buckets are powers of two, capped at the largest value seen.
        var slow = LatencyHistogram()
        for value in [1_500, 1_600, 3_000] as [Int64] { slow.record(value) }
        #expect(slow.percentile(0.5) == 2_047)
        #expect(slow.percentile(1.0) == 3_000)
        #expect(slow.summary?.maxMilliseconds == 3_000)
        #expect(slow.summary?.count == 3)
    }
}
/// Passes `afterBatches` batches, then fails for good.
private final class FailingStage: Stage {
    let name = "failing"
    let afterBatches: Int
    private let seen = Mutex(0)

    init(afterBatches: Int) { self.afterBatches = afterBatches }

    func process(_ batch: inout RecordBatch) async throws {
        let count = seen.withLock { seen in
            seen += 1
            return seen
        }
        if count > afterBatches { throw TestFailure("stage broke") }
    }
}

import Foundation
import SignetTestSupport
import Synchronization
import Testing

@testable import SignetCore

/// Remembers, for every batch it sees, the executor it ran on (each stage's task has its own,
/// labelled `signet.stage.<name>`) and the records' lines.
final class ExecutorRecordingStage: Stage {
    let name: String
    private let seen = Mutex<[(executor: String, lines: [String])]>([])
    init(name: String) { self.name = name }
    var executors: [String] { seen.withLock { $0.map(\.executor) } }
    var lines: [String] { seen.withLock { $0.flatMap(\.lines) } }
    func process(_ batch: inout RecordBatch) async throws {
        let executor = BlockingExecutor.current ?? "none"
        let lines = batch.records.map { String(decoding: $0.raw, as: UTF8.self) }
        seen.withLock { $0.append((executor, lines)) }
    }
}

/// Hands out one record per call after a pause, as the webhook does at a trickle.
final class TrickleSource: Source {
    let inner: MemorySource
    let pause: Duration
    init(_ inner: MemorySource, pause: Duration) {
        self.inner = inner
        self.pause = pause
    }
    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await Task.sleep(for: pause)
        return try await inner.nextBatch(maxRecords: 1)
    }
    func commit(_ positions: [SourcePosition]) async throws { try await inner.commit(positions) }
    func stop() async { await inner.stop() }
}

@Suite("PipelineRunner short path", .timeLimit(.minutes(5)))
struct ShortPathTests {
    private func run(_ source: some Source, batchSize: Int) async throws -> (stages: [ExecutorRecordingStage], out: CaptureSink) {
        let stages = ["a", "b", "c"].map(ExecutorRecordingStage.init(name:))
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()] + stages, sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings(batchSize: batchSize))
        try await PipelineRunner(pipeline: pipeline).run()
        return (stages, out)
    }

    @Test func aTrickleIsCarriedThroughTheLaterStagesByTheFirst() async throws {
        let lines = (1...30).map { "r\($0)" }
        let memory = MemorySource(lines: lines)
        // Batches never exceed the carry limit here, and only the first stage feeds the
        // others, so every batch finds the later steps idle and is carried.
        let (stages, out) = try await run(TrickleSource(memory, pause: .milliseconds(2)), batchSize: PipelineRunner.carryLimit)

        let (a, b, c) = (stages[0], stages[1], stages[2])
        #expect(a.executors.count == 30)
        for stage in [a, b, c] {
            #expect(stage.executors.allSatisfy { $0 == "signet.stage.check" }, "\(stage.name) ran on \(Set(stage.executors))")
        }
        #expect(c.lines == lines)
        #expect(out.values == lines.map { "out:\($0)" })
        #expect(memory.committedOffsets == Array(1...30))
    }

    @Test func aBulkBatchGoesThroughEachStagesOwnTask() async throws {
        let lines = (1...(PipelineRunner.carryLimit * 3)).map { "r\($0)" }
        let memory = MemorySource(lines: lines)
        let (stages, out) = try await run(memory, batchSize: 256)

        let (a, b, c) = (stages[0], stages[1], stages[2])
        #expect(a.executors == ["signet.stage.a"])
        #expect(b.executors == ["signet.stage.b"], "a batch over the carry limit goes from each stage's task to the next")
        #expect(c.executors == ["signet.stage.c"])
        #expect(b.lines == lines)
        #expect(out.values == lines.map { "out:\($0)" })
        #expect(memory.committedOffsets == Array(1...Int64(lines.count)))
    }
}

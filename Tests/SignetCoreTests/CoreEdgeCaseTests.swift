import Foundation
import Synchronization
import Testing
import SignetTestSupport

@testable import SignetCore

/// Serves the inner source's batches, then fails on the `failOnCall`-th `nextBatch`.
final class ThrowingSource: Source {
    let inner: MemorySource
    let failOnCall: Int
    private let calls = Mutex(0)
    init(inner: MemorySource, failOnCall: Int) {
        self.inner = inner
        self.failOnCall = failOnCall
    }
    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        let call = calls.withLock { $0 += 1; return $0 }
        if call == failOnCall { throw TestFailure("broker went away") }
        return try await inner.nextBatch(maxRecords: maxRecords)
    }
    func commit(_ positions: [SourcePosition]) async throws { try await inner.commit(positions) }
    func stop() async { await inner.stop() }
    func close() async throws { try await inner.close() }
}

@Suite("SignetCore edge cases", .timeLimit(.minutes(10)))
struct CoreEdgeCaseTests {
    @Test func sourceFailureStopsTheRunAfterDeliveringEarlierBatches() async throws {
        let inner = MemorySource(lines: (1...10).map { "r\($0)" })
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: ThrowingSource(inner: inner, failOnCall: 3), stages: [CheckStage()],
            sinks: [NamedSink(name: "out", sink: out)], deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings(batchSize: 2))
        await #expect(throws: TestFailure.self) { try await PipelineRunner(pipeline: pipeline).run() }
        // Whatever was committed was delivered first, and nothing past the read batches was committed.
        let committed = inner.committedOffsets
        #expect(committed == Array(committed.indices.map { Int64($0 + 1) }))
        #expect(committed.count <= 4)
        #expect(out.values.count >= committed.count)
        #expect(inner.closeCount == 1)
    }

    @Test func progressReportingDoesNotKeepTheRunAlive() async throws {
        var settings = testSettings(batchSize: 5)
        settings.progressInterval = .milliseconds(1)
        let source = MemorySource(lines: (1...50).map { "r\($0)" })
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: settings)
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(summary.read == 50)
        #expect(out.values.count == 50)
    }

    @Test func emptyPipelineWithoutStagesDeliversNothingButCommits() async throws {
        let source = MemorySource(lines: ["a", "b"])
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink()), settings: testSettings())
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        #expect(out.attempts == 0)
        #expect(source.committedOffsets == [1, 2])
        #expect(summary.passed == 2)
        #expect(summary.delivered == 0)
    }

    @Test func strictLintReportsEveryUnsetVariableAndOtherErrorsTogether() {
        // Regression: strict lint once stopped at the first unset variable and checked nothing else.
        let yaml = """
            source: { type: file, path: "${INPUT}" }
            sinks:
              out: { type: file, path: "${OUT}", fsinc: true }
            dead_letter: { type: file, path: "${DEAD}" }
            """
        let report = PipelineLoader(registry: coreRegistry(), environment: [:])
            .lint(yaml: yaml, file: "p.yaml", strictEnvironment: true)
        #expect(report.pipeline == nil)
        #expect(report.errors.map { $0.location?.line ?? 0 } == [1, 3, 3, 4])
        #expect(report.errors.contains { $0.message.contains("INPUT") })
        #expect(report.errors.contains { $0.message.contains("OUT") })
        #expect(report.errors.contains { $0.message.contains("DEAD") })
        #expect(report.errors.contains { $0.message.contains("unknown key 'fsinc'") })
    }

    @Test func checkpointInAMissingFolderDoesNotFailAfterDelivering() async throws {
        // Regression: a checkpoint in a missing folder once failed only after the first batch was delivered.
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let input = try dir.write("in.ndjson", "a\nb\n")
        var options = LineSource.Options()
        options.checkpointPath = dir.path("state/sub/in.checkpoint")
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: LineSource(path: input, options: options), stages: [CheckStage()],
            sinks: [NamedSink(name: "out", sink: out)], deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings())
        do {
            try await PipelineRunner(pipeline: pipeline).run()
            #expect(FileManager.default.fileExists(atPath: dir.path("state/sub/in.checkpoint")))
        } catch {
            #expect(out.values.isEmpty, "the run failed only after delivering \(out.values): \(error)")
        }
    }

    @Test func defaultWithDollarIsNotExpandedAgain() throws {
        let node = try parseNode("a: ${A:$HOME}\nb: ${B:$${X}\n", environment: ["HOME": "/root"])
        #expect(scalar(child(node, "a")) == "$HOME")
        // The default ends at the first `}`; `$${` inside a default is not an escape.
        #expect(scalar(child(node, "b")) == "$${X")
    }

    @Test func keysAreLocatedForUnknownKeyErrorsInSequences() {
        let errors = loadErrors("""
            source: { type: stdin }
            stages:
              - type: decode
              - type: decode
                extra_key: 1
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """, registry: registryWithStages())
        #expect(errors.map(\.message) == ["unknown key 'extra_key' in 'stages[1]'"])
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 5, column: 5))
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetState
import SignetTestSupport
import Testing

/// `transition` replaces every record's outputs with its events, so the runner lets `verify`
/// skip the decoded document it would otherwise build for each record; without a
/// `transition` after it, `verify` still publishes that document.
@Suite("Outputs a later stage replaces are not built")
struct OutputReplacementTests {
    struct Run {
        let runner: PipelineRunner
        let published: [OutputMessage]
        let summary: RunSummary
    }

    static func run(count: Int, withTransition: Bool) async throws -> Run {
        let directory = try TemporaryDirectory(prefix: "signet-outputs")
        defer { directory.remove() }
        let fixtures = FixtureSet(directory: directory.url)
        try fixtures.write(count: count)
        let lines = try String(contentsOfFile: directory.path("notifications.ndjson"), encoding: .utf8)
            .split(separator: "\n").map { Array($0.utf8) }
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [try fixtures.loadOrCreatePKI().root], environment: .sandbox, bundleId: fixtures.bundleId))
        let store = InMemoryStateStore()
        var stages: [any Stage] = [DecodeStage(), VerifyStage(verifier: verifier, parallelism: 2)]
        if withTransition { stages += [DedupeStage(store: store), TransitionStage(store: store)] }
        let sink = CaptureSink()
        let pipeline = Pipeline(
            source: MemorySource(rawLines: lines, stream: "fixtures"), stages: stages,
            sinks: [NamedSink(name: "out", sink: sink)], deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead-letter")))
        let runner = PipelineRunner(pipeline: pipeline)
        let summary = try await runner.run()
        return Run(runner: runner, published: sink.messages, summary: summary)
    }

    static func verifyStage(of runner: PipelineRunner) throws -> VerifyStage {
        try #require(runner.pipeline.stages.compactMap { $0 as? VerifyStage }.first)
    }

    @Test("with transition after it, verify builds no document and only events are published")
    func transitionReplacesTheDocument() async throws {
        let run = try await Self.run(count: 40, withTransition: true)
        #expect(try Self.verifyStage(of: run.runner).emitsDocument == false)
        #expect(run.summary.rejected == 0)
        #expect(!run.published.isEmpty)
        for message in run.published {
            // Every published message is an entitlement event with its headers, never the decoded document.
            #expect(message.headers.contains { $0.name == "signet-event-id" })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect(object["eventId"] is String)
            #expect(object["payload"] == nil)
        }
    }

    @Test("without transition, verify still publishes the decoded document of every record")
    func verifyAlonePublishesTheDocument() async throws {
        let run = try await Self.run(count: 12, withTransition: false)
        #expect(try Self.verifyStage(of: run.runner).emitsDocument == true)
        #expect(run.published.count == 12)
        for message in run.published {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect(object["kind"] as? String == "notification")
            #expect(object["payload"] is [String: Any])
        }
    }

    @Test("a stage that replaces outputs says so; verify's discarding copy keeps its verifier and parallelism")
    func declarations() throws {
        let store = InMemoryStateStore()
        #expect(TransitionStage(store: store).replacesOutputs)
        #expect(!DedupeStage(store: store).replacesOutputs)
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(roots: [AppleRoots.appleRootCAG3], bundleId: "com.example.signet"))
        let stage = VerifyStage(verifier: verifier, parallelism: 3)
        #expect(!stage.replacesOutputs)
        let discarding = try #require(stage.discardingOutputs() as? VerifyStage)
        #expect(discarding.emitsDocument == false)
        #expect(discarding.parallelism == 3)
        #expect(discarding.verifier === verifier)
    }
}

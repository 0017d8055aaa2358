import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetState
import SignetTestSupport
import Testing

/// `transition` replaces every record's outputs with its events and checks every dedupe key
/// in its own commit. Where the pipeline is built, `verify` before it is therefore made to
/// skip the decoded document it would otherwise build for each record, and `dedupe` on the
/// same store to skip its own key lookup: by the loader from a YAML pipeline's stages, by
/// explicit options in a pipeline built in code. Without `transition`, `verify` still
/// publishes that document and `dedupe` still looks keys up.
@Suite("Outputs a later stage replaces are not built; keys transition checks are not looked up twice")
struct OutputReplacementTests {
    struct Run {
        let pipeline: Pipeline
        let published: [OutputMessage]
        let summary: RunSummary
    }

    /// A fixture folder, its notification lines and a verifier trusting its root.
    struct Inputs {
        let directory: TemporaryDirectory
        let lines: [[UInt8]]
        let verifier: AppStoreVerifier
        let rootPath: String
        let bundleId: String

        init(count: Int) throws {
            directory = try TemporaryDirectory(prefix: "signet-outputs")
            let fixtures = FixtureSet(directory: directory.url)
            rootPath = try fixtures.write(count: count).rootPath
            bundleId = fixtures.bundleId
            lines = try String(contentsOfFile: directory.path("notifications.ndjson"), encoding: .utf8)
                .split(separator: "\n").map { Array($0.utf8) }
            verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
                roots: [try fixtures.loadOrCreatePKI().root], environment: .sandbox, bundleId: fixtures.bundleId))
        }
    }

    /// Runs `pipeline` over `lines`, its sinks replaced by one that captures.
    static func run(_ pipeline: Pipeline, lines: [[UInt8]]) async throws -> Run {
        var pipeline = pipeline
        let sink = CaptureSink()
        pipeline.source = MemorySource(rawLines: lines, stream: "fixtures")
        pipeline.sinks = [NamedSink(name: "out", sink: sink)]
        pipeline.deadLetter = DeadLetterOutput(sink: CaptureSink(name: "dead-letter"))
        let summary = try await PipelineRunner(pipeline: pipeline).run()
        return Run(pipeline: pipeline, published: sink.messages, summary: summary)
    }

    /// A pipeline built in code, with the options the loader would choose.
    static func run(count: Int, withTransition: Bool) async throws -> Run {
        let inputs = try Inputs(count: count)
        defer { inputs.directory.remove() }
        let store = InMemoryStateStore()
        var stages: [any Stage] = [DecodeStage(), VerifyStage(verifier: inputs.verifier, parallelism: 2, emitsDocument: !withTransition)]
        if withTransition {
            var dedupe = DedupeStage.Options()
            dedupe.keysCheckedByTransition = true
            stages += [DedupeStage(store: store, options: dedupe), TransitionStage(store: store)]
        }
        let pipeline = try Pipeline(
            source: MemorySource(rawLines: [], stream: "fixtures"), stages: stages,
            sinks: [NamedSink(name: "out", sink: CaptureSink())], deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead-letter")))
        return try await Self.run(pipeline, lines: inputs.lines)
    }

    /// The registry of the stages these tests use.
    static var registry: ComponentRegistry {
        var registry = ComponentRegistry()
        registry.registerCoreComponents()
        registry.registerJWSComponents()
        registry.registerStateComponents()
        return registry
    }

    /// Loads a pipeline whose `stages:` are `stages` (YAML list items), over in-memory stores `a` and `b`.
    static func load(stages: String, inputs: Inputs) throws -> Pipeline {
        let yaml = """
            stores: { a: { type: memory }, b: { type: memory } }
            source: { type: stdin }
            stages:
              - type: decode
              - { type: verify, roots: \(inputs.rootPath), environment: Sandbox, bundle_id: \(inputs.bundleId), workers: 3 }
            \(stages)
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """
        return try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "outputs.yaml")
    }

    static func verifyStage(of pipeline: Pipeline) throws -> VerifyStage {
        try #require(pipeline.stages.compactMap { $0 as? VerifyStage }.first)
    }

    static func dedupeStage(of pipeline: Pipeline) throws -> DedupeStage {
        try #require(pipeline.stages.compactMap { $0 as? DedupeStage }.first)
    }

    /// What a pipeline with `transition` must publish: entitlement events with their headers,
    /// never the decoded document.
    static func expectOnlyEvents(_ run: Run) throws {
        #expect(run.summary.rejected == 0)
        #expect(!run.published.isEmpty)
        for message in run.published {
            #expect(message.headers.contains { $0.name == "signet-event-id" })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect(object["eventId"] is String)
            #expect(object["payload"] == nil)
        }
    }

    @Test("with transition after it, verify builds no document and only events are published")
    func transitionReplacesTheDocument() async throws {
        let run = try await Self.run(count: 40, withTransition: true)
        #expect(try Self.verifyStage(of: run.pipeline).emitsDocument == false)
        try Self.expectOnlyEvents(run)
    }

    @Test("without transition, verify still publishes the decoded document of every record")
    func verifyAlonePublishesTheDocument() async throws {
        let run = try await Self.run(count: 12, withTransition: false)
        #expect(try Self.verifyStage(of: run.pipeline).emitsDocument == true)
        #expect(run.published.count == 12)
        for message in run.published {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect(object["kind"] as? String == "notification")
            #expect(object["payload"] is [String: Any])
        }
    }

    @Test("a stage that replaces outputs says so in its spec; verify built without the document keeps its verifier and parallelism")
    func declarations() throws {
        #expect(ComponentSpec.transitionStage.traits.contains(.replacesOutputs))
        #expect(!ComponentSpec.dedupeStage.traits.contains(.replacesOutputs))
        #expect(!ComponentSpec.verifyStage.traits.contains(.replacesOutputs))
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(roots: [AppleRoots.appleRootCAG3], bundleId: "com.example.signet"))
        let discarding = VerifyStage(verifier: verifier, parallelism: 3, emitsDocument: false)
        #expect(discarding.emitsDocument == false)
        #expect(discarding.parallelism == 3)
        #expect(discarding.verifier === verifier)
    }

    @Test("the loader decides from a YAML pipeline's stages: with transition later, verify builds no document and dedupe leaves the keys to transition's commit")
    func loaderDecidesWithTransition() async throws {
        let inputs = try Inputs(count: 40)
        defer { inputs.directory.remove() }
        let pipeline = try Self.load(stages: "  - { type: dedupe, store: a }\n  - { type: transition, store: a }", inputs: inputs)
        let verify = try Self.verifyStage(of: pipeline)
        #expect(verify.emitsDocument == false)
        #expect(verify.parallelism == 3)
        #expect(try Self.dedupeStage(of: pipeline).options.keysCheckedByTransition)
        try Self.expectOnlyEvents(try await Self.run(pipeline, lines: inputs.lines))
    }

    @Test("without transition, or with it on another store, the loader keeps verify's document and dedupe's own lookup")
    func loaderKeepsTheWorkOtherwise() async throws {
        let inputs = try Inputs(count: 12)
        defer { inputs.directory.remove() }
        let alone = try Self.load(stages: "  - { type: dedupe, store: a }", inputs: inputs)
        #expect(try Self.verifyStage(of: alone).emitsDocument == true)
        #expect(try Self.dedupeStage(of: alone).options.keysCheckedByTransition == false)
        let run = try await Self.run(alone, lines: inputs.lines)
        #expect(run.published.count == 12)
        for message in run.published {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect(object["kind"] as? String == "notification")
        }

        // transition before dedupe on the same store checks the keys too; on another store it does not.
        let before = try Self.load(stages: "  - { type: transition, store: a }\n  - { type: dedupe, store: a }", inputs: inputs)
        #expect(try Self.verifyStage(of: before).emitsDocument == false)
        #expect(try Self.dedupeStage(of: before).options.keysCheckedByTransition)
        let elsewhere = try Self.load(stages: "  - { type: dedupe, store: a }\n  - { type: transition, store: b }", inputs: inputs)
        #expect(try Self.verifyStage(of: elsewhere).emitsDocument == false)
        #expect(try Self.dedupeStage(of: elsewhere).options.keysCheckedByTransition == false)
    }

    @Test("dedupe drops keys already in the store unless transition checks them in its own commit")
    func dedupeLookupFollowsTheOption() async throws {
        let inputs = try Inputs(count: 4)
        defer { inputs.directory.remove() }
        var batch = RecordBatch(records: inputs.lines.enumerated().map { Record(raw: $1, position: SourcePosition(stream: "t", offset: Int64($0))) })
        try await DecodeStage().process(&batch)
        try await VerifyStage(verifier: inputs.verifier, parallelism: 1).process(&batch)
        #expect(batch.records.allSatisfy { $0.isActive })
        let store = InMemoryStateStore()
        var seen = batch
        try await DedupeStage(store: store).process(&seen)
        try store.recordKeys(seen.records.compactMap { $0[DedupeKeyPart.self] }, seenAt: WallClock.milliseconds())

        var looked = batch
        try await DedupeStage(store: store).process(&looked)
        #expect(looked.records.allSatisfy { $0.status == .dropped(reason: "duplicate") })
        var options = DedupeStage.Options()
        options.keysCheckedByTransition = true
        var left = batch
        try await DedupeStage(store: store, options: options).process(&left)
        #expect(left.records.allSatisfy { $0.isActive })
    }
}

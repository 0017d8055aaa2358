import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetTestSupport
import Synchronization
import Testing

/// What an embedding service builds with: ``StatePipeline`` wires the four state stages as
/// the loader does, a hand-built pipeline that would let committed retries pass is refused
/// where it is built, and a sink can take the events as typed values.
@Suite("Embedding the state stages: wired right by construction, typed events")
struct StatePipelineTests {
    typealias Inputs = OutputReplacementTests.Inputs

    /// A sink of typed events, as an embedder writes one.
    final class EventCollector: EntitlementEventSink {
        let events = Mutex<[EntitlementEvent]>([])
        func write(events batch: [EntitlementEvent]) async throws {
            events.withLock { $0 += batch }
        }
    }

    /// Reads every record's typed events after `transition`, as a stage of an embedder would.
    final class TypedEventsProbe: Stage {
        let name = "probe"
        let seen = Mutex<[EntitlementEvent]>([])
        func process(_ batch: inout RecordBatch) async throws {
            let events = batch.records.flatMap { $0[EntitlementEventsPart.self] ?? [] }
            seen.withLock { $0 += events }
        }
    }

    static func pipeline(_ stages: [any Stage], lines: [[UInt8]], sink: any Sink) throws -> Pipeline {
        try Pipeline(
            source: MemorySource(rawLines: lines, stream: "fixtures"), stages: stages,
            sinks: [NamedSink(name: "events", sink: sink)], deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead-letter")))
    }

    @Test("StatePipeline.stages: events reach a typed sink, equal to the JSON published, and a second run of the same lines changes nothing")
    func wiredStagesPublishTypedEventsOnce() async throws {
        let inputs = try Inputs(count: 30)
        defer { inputs.directory.remove() }
        let store = InMemoryStateStore()
        let stages = StatePipeline.stages(verifier: inputs.verifier, store: store)
        #expect(stages.map(\.name) == ["decode", "verify", "dedupe", "transition"])
        #expect((stages[1] as? VerifyStage)?.emitsDocument == false)
        #expect((stages[2] as? DedupeStage)?.options.keysCheckedByTransition == true)

        let probe = TypedEventsProbe()
        let typed = EventCollector()
        let summary = try await PipelineRunner(pipeline: Self.pipeline(stages + [probe], lines: inputs.lines, sink: typed)).run()
        let events = typed.events.withLock { $0 }
        #expect(summary.rejected == 0)
        // Most fixtures change access; a few (a renewal-preference change, a test notification) do not.
        #expect(events.count > inputs.lines.count / 2)
        // The typed values on the records are the ones the sink read back from the bytes.
        #expect(probe.seen.withLock { $0 } == events)
        #expect(Set(events.map(\.eventId)).count == events.count)

        // Apple's retries of every notification, against the same store: dropped as duplicates.
        let again = EventCollector()
        let second = try await PipelineRunner(
            pipeline: Self.pipeline(StatePipeline.stages(verifier: inputs.verifier, store: store), lines: inputs.lines, sink: again)
        ).run()
        #expect(again.events.withLock { $0 }.isEmpty)
        #expect(second.dropped == inputs.lines.count)
    }

    @Test("a dedupe that leaves its lookup to transition is refused without a transition on its store")
    func dedupeWithoutItsTransitionIsRefused() throws {
        let inputs = try Inputs(count: 1)
        defer { inputs.directory.remove() }
        var options = DedupeStage.Options()
        options.keysCheckedByTransition = true
        let store = InMemoryStateStore()
        let front: [any Stage] = [DecodeStage(), VerifyStage(verifier: inputs.verifier)]

        let alone = #expect(throws: PipelineWiringError.self) {
            try Self.pipeline(front + [DedupeStage(store: store, options: options)], lines: [], sink: CaptureSink())
        }
        #expect(alone?.index == 2)
        #expect(alone?.stage == "dedupe")
        #expect(alone?.description.contains("retries of committed notifications would pass") == true)

        // A transition on another store checks other keys: still refused.
        let elsewhere = #expect(throws: PipelineWiringError.self) {
            try Self.pipeline(
                front + [DedupeStage(store: store, options: options), TransitionStage(store: InMemoryStateStore())], lines: [],
                sink: CaptureSink())
        }
        #expect(elsewhere?.index == 2)

        // On the same store (an instance, or a resource holding it): accepted.
        _ = try Self.pipeline(front + [DedupeStage(store: store, options: options), TransitionStage(store: store)], lines: [], sink: CaptureSink())
        _ = try Self.pipeline(
            front + [DedupeStage(store: store, options: options), TransitionStage(resource: StateStoreResource(store: store))],
            lines: [], sink: CaptureSink())
        // Without the flag, dedupe looks keys up itself and needs no transition.
        _ = try Self.pipeline(front + [DedupeStage(store: store)], lines: [], sink: CaptureSink())
    }

    @Test("stages changed after the pipeline was built are checked again before the run opens anything")
    func theRunnerChecksAgain() async throws {
        let inputs = try Inputs(count: 1)
        defer { inputs.directory.remove() }
        let store = InMemoryStateStore()
        var pipeline = try Self.pipeline(StatePipeline.stages(verifier: inputs.verifier, store: store), lines: inputs.lines, sink: CaptureSink())
        pipeline.stages.removeLast()  // transition gone: verify publishes nothing, dedupe checks nothing
        let source = MemorySource(rawLines: inputs.lines, stream: "fixtures")
        pipeline.source = source
        await #expect(throws: PipelineWiringError.self) { try await PipelineRunner(pipeline: pipeline).run() }
    }

    @Test("verify without its document needs a later stage that publishes instead")
    func verifyWithoutDocumentNeedsAReplacement() throws {
        let inputs = try Inputs(count: 1)
        defer { inputs.directory.remove() }
        let error = #expect(throws: PipelineWiringError.self) {
            try Self.pipeline([DecodeStage(), VerifyStage(verifier: inputs.verifier, emitsDocument: false)], lines: [], sink: CaptureSink())
        }
        #expect(error?.index == 1)
        #expect(error?.description.contains("the sinks would receive nothing") == true)
    }

    @Test("a typed sink given something other than events stops the run at once with a clear error")
    func typedSinkRefusesDocuments() async throws {
        let inputs = try Inputs(count: 2)
        defer { inputs.directory.remove() }
        let pipeline = try Self.pipeline([DecodeStage(), VerifyStage(verifier: inputs.verifier)], lines: inputs.lines, sink: EventCollector())
        let error = await #expect(throws: SinkError.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(error?.isPermanent == true)
        #expect(error?.description.contains("is not an entitlement event") == true)
    }

    @Test("EntitlementEvent is Codable to exactly the published document: every schema field, nulls written, read back equal")
    func eventsAreCodableAsPublished() async throws {
        let inputs = try Inputs(count: 12)
        defer { inputs.directory.remove() }
        let typed = EventCollector()
        let store = InMemoryStateStore()
        try await PipelineRunner(
            pipeline: Self.pipeline(StatePipeline.stages(verifier: inputs.verifier, store: store), lines: inputs.lines, sink: typed)
        ).run()
        let events = typed.events.withLock { $0 }
        try #require(!events.isEmpty)
        let schema = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "Schemas/entitlement-event.schema.json")))
                as? [String: Any])
        let fields = Set(try #require(schema["properties"] as? [String: Any]).keys)
        let encoder = JSONEncoder()
        for event in events {
            let published = try #require(try JSONSerialization.jsonObject(with: Data(event.json)) as? NSDictionary)
            let encoded = try #require(try JSONSerialization.jsonObject(with: encoder.encode(event)) as? NSDictionary)
            #expect(encoded == published)
            #expect(Set(encoded.allKeys.compactMap { $0 as? String }) == fields)
            #expect(try JSONDecoder().decode(EntitlementEvent.self, from: encoder.encode(event)) == event)
        }

        // A token as clients write it (upper case) reads as the one canonical token.
        var document = try #require(try JSONSerialization.jsonObject(with: Data(events[0].json)) as? [String: Any])
        document["appAccountToken"] = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        let upper = try EntitlementEvent(json: Array(try JSONSerialization.data(withJSONObject: document)))
        #expect(upper.appAccountToken?.description == "7e3fb20b-4cdb-47cc-936d-99d65f608138")

        // A newer contract is refused rather than read wrong.
        document["schemaVersion"] = 2
        #expect(throws: DecodingError.self) { try EntitlementEvent(json: Array(try JSONSerialization.data(withJSONObject: document))) }
    }
}

import Foundation
import MetricsTestKit
import SignetTestSupport
import Testing

@testable import SignetCore

/// The delivery core's promises: nothing refused is dropped, and the summary and the
/// metrics count the same things.
@Suite("Delivery accounting", .timeLimit(.minutes(10)))
struct DeliveryAccountingTests {
    @Test func aDeadLetterSinkThatRefusesForGoodStopsTheRunBeforeTheCommit() async throws {
        let source = MemorySource(lines: ["r1", "bad2", "r3"])
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: RefusingSink(refusing: { _ in true })),
            settings: testSettings(batchSize: 1))
        let error = await #expect(throws: SinkError.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(error?.isPermanent == true)
        #expect(error?.description.contains("dead-letter sink refused 1 of 1") == true)
        // The reject's position is never committed: the next run reads it again.
        #expect(source.committedOffsets == [1])
        #expect(out.values == ["out:r1"])
    }

    @Test func aMessageASinkRefusesIsNotLostWhenTheDeadLetterSinkRefusesItToo() async throws {
        let source = MemorySource(lines: ["r1", "r2", "r3"])
        let out = RefusingSink(refusing: { text($0.value) == "out:r2" })
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: RefusingSink(refusing: { _ in true })),
            settings: testSettings(batchSize: 1))
        await #expect(throws: SinkError.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(source.committedOffsets == [1])
    }

    @Test func refusedMessagesAreDeadLetteredAndNotCountedAsDelivered() async throws {
        let metrics = TestMetrics()
        let source = MemorySource(lines: ["r1", "r2", "r3", "bad4"])
        let out = RefusingSink(refusing: { text($0.value) == "out:r2" })
        let dead = CaptureSink(name: "dead")
        let pipeline = try Pipeline(
            source: source, stages: [CheckStage(), EventTypeStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: dead), settings: testSettings(batchSize: 4))
        let summary = try await PipelineRunner(pipeline: pipeline, metrics: PipelineMetrics(factory: metrics)).run()

        #expect(out.values == ["out:r1", "out:r3"])
        #expect(summary.delivered == 2)
        #expect(summary.deliveredBySink == ["out": 2])
        #expect(try metrics.expectCounter("signet_sink_deliveries_total", [("sink", "out")]).totalValue == 2)
        #expect(try metrics.expectCounter("signet_events_total", [("type", "renewed")]).totalValue == 2)
        let reasons = try dead.jsonObjects().map { $0["reason"] as? String }
        #expect(reasons.sorted { ($0 ?? "") < ($1 ?? "") } == ["test_bad", "test_refused"])
        #expect(try metrics.expectCounter("signet_dead_letters_total", [("reason", "test_refused")]).totalValue == 1)
        #expect(source.committedOffsets == [1, 2, 3, 4])
    }

    @Test func recordsATickingStageGeneratesLeaveFlightAtZero() async throws {
        let metrics = TestMetrics()
        let sweep = SweepingStage(interval: .milliseconds(5), delay: .milliseconds(40))
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: MemorySource(lines: (1...6).map { "r\($0)" }), stages: [CheckStage(), sweep],
            sinks: [NamedSink(name: "out", sink: out)], deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings(batchSize: 1))
        let summary = try await PipelineRunner(pipeline: pipeline, metrics: PipelineMetrics(factory: metrics)).run()

        let generated = out.values.filter { $0.hasPrefix("swept:") }.count
        #expect(generated > 0, "the sweep should have ticked during the run")
        #expect(summary.read == 6)
        #expect(summary.passed == 6)
        let inFlight = try metrics.expectMeter("signet_records_in_flight")
        #expect(inFlight.lastValue == 0)
        #expect(inFlight.values.allSatisfy { $0 >= 0 })
    }

    @Test func thePlanRoutesCountsAndCommitsWithoutWriting() {
        var generated = Record(raw: [], position: SourcePosition(stream: "sweep", offset: 1))
        generated[GeneratedRecordPart.self] = true
        generated.outputs.append(OutputMessage(value: [1], headers: [.init(.eventType, "expired")]))
        var routed = Record(raw: [], position: SourcePosition(stream: "s", offset: 1))
        routed.outputs.append(OutputMessage(value: [2], headers: [.init(.eventType, "renewed")], routes: ["a"]))
        routed.outputs.append(OutputMessage(value: [3], headers: [.init(.eventType, "renewed")]))
        var rejected = Record(raw: [], position: SourcePosition(stream: "s", offset: 2))
        rejected.reject(RecordRejection("test_bad", "bad"), stage: "check")
        var dropped = Record(raw: [], position: SourcePosition(stream: "s", offset: 3))
        dropped.drop(reason: "duplicate")
        let plan = DeliveryPlan(
            batch: RecordBatch(records: [generated, routed, rejected, dropped]), sinkNames: ["a", "b"],
            deadLetter: DeadLetterOutput(sink: CaptureSink()))

        #expect(plan.outcomes.map(\.position.offset) == [1, 2, 3])
        #expect(plan.outcomes.allSatisfy { $0.position.stream == "s" })
        // Each with what became of it: the source answers by it (the webhook).
        #expect(plan.outcomes.map { $0.status == .active } == [true, false, false])
        #expect(plan.counts.passed == 1)
        #expect(plan.counts.rejectedByReason == ["test_bad": 1])
        #expect(plan.counts.droppedByReason == ["duplicate": 1])
        #expect(plan.deadLetters.count == 1)
        #expect(plan.shares.map { $0.messages.map(\.value) } == [[[1], [2], [3]], [[1], [3]]])

        // Sink a refuses the message routed only to it; b accepts all.
        let refusal = UndeliverableMessages.Refusal(index: 1, rejection: RecordRejection("test_refused", "no"))
        let settlement = plan.settle(refusals: [[refusal], []])
        #expect(settlement.deliveredBySink == ["a": 2, "b": 2])
        #expect(settlement.delivered == 4)
        #expect(settlement.publishedEventTypes == ["expired": 1, "renewed": 1])
        #expect(settlement.refusedDeadLetters.map { $0.header(.stage) } == ["sinks.a"])
        #expect(settlement.refusedDeadLetters.map { $0.header(.reason) } == ["test_refused"])
    }

    @Test("a verifiedRaw sink gets the raw bytes of every verified record, a dropped repeat too, and never an output")
    func verifiedRawShares() {
        func record(_ raw: String, offset: Int64, verified: Bool) -> Record {
            var made = Record(raw: Array(raw.utf8), position: SourcePosition(stream: "s", offset: offset))
            if verified { made[ForwardablePart.self] = true }
            made.outputs.append(OutputMessage(value: Array("event-\(raw)".utf8), headers: [.init(.eventType, "renewed")]))
            return made
        }
        let passed = record("a", offset: 1, verified: true)
        let unverified = record("b", offset: 2, verified: false)
        var rejectedLater = record("c", offset: 3, verified: true)
        rejectedLater.reject(RecordRejection("test_state", "no"), stage: "transition")
        var repeated = record("d", offset: 4, verified: true)
        repeated.drop(reason: "duplicate")
        let plan = DeliveryPlan(
            batch: RecordBatch(records: [passed, unverified, rejectedLater, repeated]), sinkNames: ["events", "staging"],
            sinkInputs: [.outputs, .verifiedRaw], deadLetter: DeadLetterOutput(sink: CaptureSink()))
        let shares = Dictionary(uniqueKeysWithValues: plan.shares.map { (plan.sinkNames[$0.sink], $0.messages.map { String(decoding: $0.value, as: UTF8.self) }) })
        #expect(shares["events"] == ["event-a", "event-b"])
        #expect(shares["staging"] == ["a", "c", "d"])
        let settlement = plan.settle(refusals: [[], []])
        #expect(settlement.deliveredBySink == ["events": 2, "staging": 3])
        #expect(settlement.publishedEventTypes == ["renewed": 2], "a forwarded body is not an event")
        #expect(plan.deadLetters.count == 1)
    }
}

/// Marks each active record's outputs as `renewed` events.
struct EventTypeStage: RecordStage {
    let name = "event_type"
    func process(record: inout Record) throws(RecordRejection) {
        for index in record.outputs.indices { record.outputs[index].headers.append(.init(.eventType, "renewed")) }
    }
}

/// A source whose close cannot commit what was finished (a Kafka group stuck rebalancing).
final class UncommittableSource: Source {
    let inner: MemorySource
    init(_ inner: MemorySource) { self.inner = inner }
    func nextBatch(maxRecords: Int) async throws -> [Record]? { try await inner.nextBatch(maxRecords: maxRecords) }
    func commit(_ positions: [SourcePosition]) async throws { try await inner.commit(positions) }
    func stop() async { await inner.stop() }
    func close() async throws {
        throw UncommittedPositions(positions: ["t[0]": 3], reason: "REBALANCE_IN_PROGRESS")
    }
}

@Suite("A stop that leaves work to redo")
struct UncommittedStopTests {
    @Test func theRunThrowsAfterClosingEverythingElse() async throws {
        let out = CaptureSink(name: "out")
        let pipeline = try Pipeline(
            source: UncommittableSource(MemorySource(lines: ["a", "b"])), stages: [CheckStage()],
            sinks: [NamedSink(name: "out", sink: out)], deadLetter: DeadLetterOutput(sink: CaptureSink()),
            settings: testSettings())
        let error = await #expect(throws: UncommittedPositions.self) { try await PipelineRunner(pipeline: pipeline).run() }
        #expect(error?.positions == ["t[0]": 3])
        #expect(out.values == ["out:a", "out:b"])
        #expect(out.closeCount == 1, "the sinks are closed before the error is thrown")
    }
}

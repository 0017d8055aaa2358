import Foundation
import SignetTestSupport
import Synchronization
import Testing

@testable import SignetCore

/// A push source as the webhook is one: it offers records into its queue as they arrive.
final class OfferingSource: PushSource {
    let input = RecordQueue<Record>(capacity: 100)
    let inputLinger: RecordQueueLinger
    private let state = Mutex<(next: Int64, committed: [Int64], pulled: Bool)>((0, [], false))

    init(linger: RecordQueueLinger = .none) { inputLinger = linger }

    /// Offers `lines` as the next records; false when the queue refused them.
    func offer(_ lines: [String]) -> Bool {
        let records = state.withLock { state in
            lines.map { line in
                state.next += 1
                return Record(raw: Array(line.utf8), position: SourcePosition(stream: "push", offset: state.next))
            }
        }
        return input.offer(records)
    }

    var committed: [Int64] { state.withLock { $0.committed } }
    var wasPulled: Bool { state.withLock { $0.pulled } }

    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        state.withLock { $0.pulled = true }
        return try await input.nextElements(max: maxRecords)
    }

    func commit(_ positions: [SourcePosition]) async throws {
        state.withLock { $0.committed += positions.map(\.offset) }
    }

    func stop() async { input.finish() }
    func close() async throws { input.stop() }
}

/// Notes the size of every batch it is given; passes records on untouched.
final class BatchSizeStage: Stage {
    let name = "sizes"
    private let sizes = Mutex<[Int]>([])
    var batchSizes: [Int] { sizes.withLock { $0 } }
    func process(_ batch: inout RecordBatch) async throws {
        let count = batch.records.count
        sizes.withLock { $0.append(count) }
    }
}

/// The runner takes a push source's records straight from its queue as the first stage's
/// input (no pump, no second queue), in batches of its size, and drains them at a stop.
@Suite("PipelineRunner with a push source", .timeLimit(.minutes(2)))
struct PushSourceRunnerTests {
    @Test("records offered while the run goes on are processed, delivered and committed in order, in batches of the runner's size; the source is never pulled; a stop drains what is queued")
    func offeredRecordsFlow() async throws {
        let source = OfferingSource()
        let out = CaptureSink(name: "out")
        let batches = BatchSizeStage()
        let pipeline = try Pipeline(
            source: source, stages: [batches, CheckStage()], sinks: [NamedSink(name: "out", sink: out)],
            deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead")), settings: testSettings(batchSize: 4))
        // Ten queued before the run starts: taken 4, 4, 2.
        #expect(source.offer((1...10).map { "a\($0)" }))
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }
        #expect(await eventuallyTrue { source.committed.count == 10 })
        // More while it runs, then a stop with some still queued: all are drained.
        #expect(source.offer(["b1", "b2", "b3"]))
        await runner.requestStop()
        let summary = try await run.value
        #expect(source.committed == Array(1...13))
        #expect(out.values == (1...10).map { "out:a\($0)" } + ["out:b1", "out:b2", "out:b3"])
        #expect(summary.read == 13)
        #expect(!source.wasPulled)
        #expect(batches.batchSizes.prefix(3) == [4, 4, 2], "\(batches.batchSizes)")
        #expect(batches.batchSizes.allSatisfy { $0 <= 4 })
    }

    @Test("the first take lingers as the source asks: a trickle shares one batch")
    func lingerGathersATrickle() async throws {
        let linger = Duration.seconds(2)
        let source = OfferingSource(linger: .sinceOldest(linger))
        let batches = BatchSizeStage()
        let pipeline = try Pipeline(
            source: source, stages: [batches, CheckStage()], sinks: [NamedSink(name: "out", sink: CaptureSink(name: "out"))],
            deadLetter: DeadLetterOutput(sink: CaptureSink(name: "dead")), settings: testSettings(batchSize: 64))
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }
        let first = ContinuousClock.now
        for index in 1...3 {
            #expect(source.offer(["t\(index)"]))
            if index < 3 { try await Task.sleep(for: .milliseconds(30)) }
        }
        let offered = ContinuousClock.now - first
        #expect(await eventuallyTrue { source.committed.count == 3 })
        await runner.requestStop()
        _ = try await run.value
        // On a machine so loaded that three offers 30 ms apart took longer than the linger, the
        // batch closed as it should: only a trickle within the linger must share one.
        if offered < linger {
            #expect(batches.batchSizes == [3], "\(batches.batchSizes) (offered within \(offered))")
        } else {
            #expect(batches.batchSizes.reduce(0, +) == 3, "\(batches.batchSizes)")
        }
    }

    func eventuallyTrue(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

import Synchronization
import SignetTestSupport
import Testing

@testable import SignetCore

@Suite("BatchHandoff", .timeLimit(.minutes(10)))
struct BatchHandoffTests {
    func batch(_ offsets: ClosedRange<Int>) -> RecordBatch {
        RecordBatch(records: offsets.map { Record(raw: [], position: SourcePosition(stream: "s", offset: Int64($0))) })
    }

    func offsets(_ item: BatchHandoff.Item?) -> [Int64] {
        guard case .batch(let batch)? = item else { return [] }
        return batch.records.map(\.position.offset)
    }

    @Test func batchesSentWhileTheReceiverIsBusyMergeInOrder() async throws {
        let handoff = BatchHandoff(capacity: 10)
        await handoff.send(batch(1...2))
        await handoff.send(batch(3...3))
        await handoff.send(batch(4...6))
        handoff.finish()
        #expect(offsets(try await handoff.next()) == [1, 2, 3, 4, 5, 6])
        #expect(try await handoff.next() == nil)
    }

    @Test func aBatchThatDoesNotFitWaitsForTheReceiver() async throws {
        let handoff = BatchHandoff(capacity: 4)
        await handoff.send(batch(1...3))
        let sent = Mutex(false)
        let sender = Task {
            await handoff.send(batch(4...5))  // 3 + 2 > 4: must wait
            sent.withLock { $0 = true }
            handoff.finish()
        }
        try await Task.sleep(for: .milliseconds(50))
        let sentEarly = sent.withLock { $0 }
        #expect(!sentEarly, "the send should wait while the slot is full")
        #expect(offsets(try await handoff.next()) == [1, 2, 3])
        await sender.value
        #expect(offsets(try await handoff.next()) == [4, 5])
        #expect(try await handoff.next() == nil)
    }

    @Test func aWaitingReceiverGetsTheFirstBatchAtOnce() async throws {
        let handoff = BatchHandoff(capacity: 100)
        let received = Task { try await handoff.next() }
        try await Task.sleep(for: .milliseconds(20))
        await handoff.send(batch(7...7))
        #expect(offsets(try await received.value) == [7])
    }

    @Test func aFailureComesAfterWhatIsPending() async throws {
        let handoff = BatchHandoff(capacity: 10)
        await handoff.send(batch(1...2))
        handoff.fail(TestFailure("stage broke"))
        #expect(offsets(try await handoff.next()) == [1, 2])
        await #expect(throws: TestFailure.self) { try await handoff.next() }
    }

    @Test func aFailureWakesAWaitingReceiver() async throws {
        let handoff = BatchHandoff(capacity: 10)
        let received = Task { try await handoff.next() }
        try await Task.sleep(for: .milliseconds(20))
        handoff.fail(TestFailure("source broke"))
        await #expect(throws: TestFailure.self) { try await received.value }
    }

    @Test func cancellingAWaitingReceiverOrSenderEndsTheWait() async throws {
        let handoff = BatchHandoff(capacity: 1)
        let receiver = Task { try await handoff.next() }
        try await Task.sleep(for: .milliseconds(20))
        receiver.cancel()
        await #expect(throws: CancellationError.self) { try await receiver.value }

        let full = BatchHandoff(capacity: 1)
        await full.send(batch(1...1))
        let sender = Task { await full.send(batch(2...2)) }
        try await Task.sleep(for: .milliseconds(20))
        sender.cancel()
        await sender.value  // returns: the batch is dropped, its positions are never committed
        full.finish()
        #expect(offsets(try await full.next()) == [1])
        #expect(try await full.next() == nil)
    }
}

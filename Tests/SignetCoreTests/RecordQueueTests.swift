import SignetTestSupport
import Synchronization
import Testing

@testable import SignetCore

/// The queue with real tasks: suspension, resumption, cancellation and timers. The rules
/// themselves are tested step by step in ``RecordQueueStateMachineTests``.
@Suite("RecordQueue", .timeLimit(.minutes(10)))
struct RecordQueueTests {
    func records(_ offsets: ClosedRange<Int>) -> [Record] {
        offsets.map { Record(raw: [], position: SourcePosition(stream: "s", offset: Int64($0))) }
    }

    func offsets(_ taken: RecordQueue<Record>.Taken?) -> [Int64] {
        guard case .elements(let records)? = taken else { return [] }
        return records.map(\.position.offset)
    }

    func isEnd(_ taken: RecordQueue<Record>.Taken?) -> Bool { taken == nil }

    @Test func batchesSentWhileTheConsumerIsBusyMergeInOrder() async throws {
        let queue = RecordQueue<Record>(capacity: 10)
        await queue.send(records(1...2))
        await queue.send(records(3...3))
        await queue.send(records(4...6))
        queue.finish()
        #expect(offsets(try await queue.take()) == [1, 2, 3, 4, 5, 6])
        #expect(isEnd(try await queue.take()))
    }

    @Test func aBatchThatDoesNotFitWaitsForTheConsumer() async throws {
        let queue = RecordQueue<Record>(capacity: 4)
        await queue.send(records(1...3))
        let sent = Mutex(false)
        let sender = Task {
            await queue.send(records(4...5))  // 3 + 2 > 4: must wait
            sent.withLock { $0 = true }
            queue.finish()
        }
        try await Task.sleep(for: .milliseconds(50))
        let sentEarly = sent.withLock { $0 }
        #expect(!sentEarly, "the send should wait while the queue is full")
        #expect(offsets(try await queue.take()) == [1, 2, 3])
        await sender.value
        #expect(offsets(try await queue.take()) == [4, 5])
        #expect(isEnd(try await queue.take()))
    }

    @Test func aWaitingConsumerGetsTheFirstBatchAtOnce() async throws {
        let queue = RecordQueue<Record>(capacity: 100)
        let received = Task { try await queue.take() }
        try await Task.sleep(for: .milliseconds(20))
        await queue.send(records(7...7))
        #expect(offsets(try await received.value) == [7])
    }

    @Test func aFailureComesAfterWhatIsQueued() async throws {
        let queue = RecordQueue<Record>(capacity: 10)
        await queue.send(records(1...2))
        queue.finish(failure: TestFailure("stage broke"))
        #expect(offsets(try await queue.take()) == [1, 2])
        await #expect(throws: TestFailure.self) { try await queue.take() }
    }

    @Test func aFailureWakesAWaitingConsumer() async throws {
        let queue = RecordQueue<Record>(capacity: 10)
        let received = Task { try await queue.take() }
        try await Task.sleep(for: .milliseconds(20))
        queue.finish(failure: TestFailure("source broke"))
        await #expect(throws: TestFailure.self) { try await received.value }
    }

    @Test func cancellingAWaitingConsumerOrProducerEndsTheWait() async throws {
        let queue = RecordQueue<Record>(capacity: 1)
        let consumer = Task { try await queue.take() }
        try await Task.sleep(for: .milliseconds(20))
        consumer.cancel()
        await #expect(throws: CancellationError.self) { try await consumer.value }

        let full = RecordQueue<Record>(capacity: 1)
        await full.send(records(1...1))
        let producer = Task { await full.send(records(2...2)) }
        try await Task.sleep(for: .milliseconds(20))
        producer.cancel()
        // Returns false: the records are dropped, their positions are never committed.
        #expect(await producer.value == false)
        full.finish()
        #expect(offsets(try await full.take()) == [1])
        #expect(isEnd(try await full.take()))
    }

    @Test func aWakeReachesAnIdleConsumerWithoutElements() async throws {
        let queue = RecordQueue<Record>(capacity: 4)
        let received = Task { try await queue.take() }
        try await Task.sleep(for: .milliseconds(20))
        queue.wake()
        guard case .woken? = try await received.value else {
            Issue.record("the idle consumer should be woken without elements")
            return
        }
    }

    @Test func aLingeringTakeEndsAtItsDeadlineWithWhatArrived() async throws {
        let queue = RecordQueue<Record>(capacity: 100)
        await queue.send(records(1...1))
        let started = ContinuousClock.now
        let taken = try await queue.take(max: 10, linger: .sinceOldest(.milliseconds(60)))
        #expect(offsets(taken) == [1])
        #expect(ContinuousClock.now - started >= .milliseconds(50), "it should linger for more")
    }

    @Test func aLingeringTakeEndsEarlyOnceItHasEnough() async throws {
        let queue = RecordQueue<Record>(capacity: 100)
        await queue.send(records(1...1))
        let taken = Task { try await queue.take(max: 3, linger: .sinceOldest(.seconds(60))) }
        try await Task.sleep(for: .milliseconds(20))
        await queue.send(records(2...3))
        #expect(offsets(try await taken.value) == [1, 2, 3])
    }

    @Test func aTakeUntilADeadlineWithNothingQueuedReturnsNoElements() async throws {
        let queue = RecordQueue<Record>(capacity: 100)
        let taken = try await queue.take(max: 3, linger: .until(.now + .milliseconds(20)))
        #expect(offsets(taken) == [])
        guard case .elements? = taken else {
            Issue.record("a deadline with nothing queued returns no elements, not the end")
            return
        }
    }

    @Test func stopDropsWhatIsQueuedAndRefusesProducers() async throws {
        let queue = RecordQueue<Record>(capacity: 1)
        await queue.send(records(1...1))
        let producer = Task { await queue.send(records(2...2)) }
        try await Task.sleep(for: .milliseconds(20))
        queue.stop()
        #expect(await producer.value == false)
        #expect(isEnd(try await queue.take()))
        #expect(await queue.send(records(3...3)) == false)
        #expect(!queue.offer(records(3...3)))
    }

    @Test func pollTakesWhatIsQueuedWithoutWaiting() async throws {
        let queue = RecordQueue<Record>(capacity: 2)
        #expect(queue.poll().isEmpty)
        await queue.send(records(1...2))
        let producer = Task { await queue.send(records(3...3)) }
        try await Task.sleep(for: .milliseconds(20))
        #expect(queue.poll(max: 1).map(\.position.offset) == [1])
        // The waiting producer took the freed room.
        #expect(await producer.value)
        #expect(queue.poll().map(\.position.offset) == [2, 3])
    }
}

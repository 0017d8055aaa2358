import SignetCore
import Testing

/// The queue's consumer-side helpers and the wake-up built on it: batches that pass over
/// wakes, one consumer only, and a loop's wait that ends at its deadline or a wake.
@Suite("waiting: queue batches, one consumer, wake-ups", .timeLimit(.minutes(2)))
struct WaitingPrimitivesTests {
    @Test("batches pass over wakes and empty takes, in order, and end with the queue; a failure is thrown after what came before")
    func batchesSkipWakes() async throws {
        let queue = RecordQueue<Int>(capacity: 100)
        queue.wake()
        await queue.send([1, 2])
        queue.wake()
        await queue.send([3])
        queue.finish()
        var seen: [[Int]] = []
        for try await batch in queue.batches() { seen.append(batch) }
        #expect(seen.flatMap { $0 } == [1, 2, 3])
        #expect(seen.allSatisfy { !$0.isEmpty })

        struct Broke: Error {}
        let failing = RecordQueue<Int>(capacity: 10)
        await failing.send([7])
        failing.finish(failure: Broke())
        #expect(try await failing.nextElements() == [7])
        await #expect(throws: Broke.self) { try await failing.nextElements() }
    }

    @Test("a second consumer waiting on a queue traps instead of leaving the first suspended for ever")
    func aSecondConsumerTraps() async {
        await #expect(processExitsWith: .failure) {
            let queue = RecordQueue<Int>(capacity: 1)
            let first = Task { try await queue.take() }
            try await Task.sleep(for: .milliseconds(100))
            _ = try await queue.take()
            _ = try await first.value
        }
    }

    @Test("a wake-up's wait ends at its deadline (false), at a wake (true, early), or at once for a wake that came while it was busy; wakes coalesce")
    func wakeUp() async throws {
        let alarm = WakeUp()
        let started = ContinuousClock.now
        #expect(try await alarm.wait(for: .milliseconds(50)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(50))

        let waiting = Task { try await alarm.wait(for: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(30))
        alarm.wake()
        #expect(try await waiting.value == true)
        #expect(ContinuousClock.now - started < .seconds(30))

        // Woken twice while busy: the next wait returns at once, the one after waits again.
        alarm.wake()
        alarm.wake()
        #expect(try await alarm.wait(for: .seconds(60)) == true)
        #expect(try await alarm.wait(for: .milliseconds(20)) == false)
    }

    @Test("a cancelled wake-up wait throws CancellationError")
    func wakeUpCancellation() async throws {
        let alarm = WakeUp()
        let waiting = Task { try await alarm.wait(for: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }
}

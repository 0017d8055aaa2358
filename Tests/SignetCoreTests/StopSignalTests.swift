import SignetCore
import Testing

/// The one-shot stop event: a wait ends at its timeout, at the signal, or at cancellation,
/// whichever comes first, and every waiter wakes.
@Suite("stop signal")
struct StopSignalTests {
    @Test("unfired, a wait ends at its timeout and says so")
    func timesOut() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        #expect(await signal.wait(upTo: .milliseconds(50)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        #expect(!signal.isFired)
    }

    @Test("fire wakes every waiter long before their timeout; later waits return at once; firing again is harmless")
    func fireWakesAll() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { await signal.wait(upTo: .seconds(60)) } }
            try? await Task.sleep(for: .milliseconds(50))
            signal.fire()
            signal.fire()
            for await woke in group { #expect(woke) }
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(signal.isFired)
        #expect(await signal.wait(upTo: .seconds(60)))
    }

    @Test("a cancelled waiter stops waiting without the signal, and the signal still fires for others")
    func cancellation() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        let waiter = Task { await signal.wait(upTo: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(ContinuousClock.now - started < .seconds(30))
        // Cancelled before it could start waiting at all.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await signal.wait(upTo: .seconds(60))
        }
        #expect(await early.value == false)
        let other = Task { await signal.wait(upTo: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(20))
        signal.fire()
        #expect(await other.value)
    }
}

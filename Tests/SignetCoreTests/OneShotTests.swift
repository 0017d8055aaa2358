import SignetCore
import Testing

/// The one-shot event every waiter in Signet uses (a port, a start, a result, a stop): a wait
/// ends at the value, its timeout or cancellation, whichever comes first; every waiter wakes;
/// the first value stands.
@Suite("one-shot: a value set once, waited for by many")
struct OneShotTests {
    @Test("unfired, a wait ends at its timeout and says so")
    func timesOut() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        #expect(await signal.fired(within: .milliseconds(50)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        #expect(!signal.isFired)
    }

    @Test("fire wakes every waiter long before their timeout; later waits return at once; firing again is harmless")
    func fireWakesAll() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { await signal.fired(within: .seconds(60)) } }
            try? await Task.sleep(for: .milliseconds(50))
            signal.fire()
            signal.fire()
            for await woke in group { #expect(woke) }
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(signal.isFired)
        #expect(await signal.fired(within: .seconds(60)))
    }

    @Test("a cancelled waiter stops waiting without the signal, and the signal still fires for others")
    func cancellation() async {
        let signal = StopSignal()
        let started = ContinuousClock.now
        let waiter = Task { await signal.fired(within: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(ContinuousClock.now - started < .seconds(30))
        // Cancelled before it could start waiting at all.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await signal.fired(within: .seconds(60))
        }
        #expect(await early.value == false)
        let other = Task { await signal.fired(within: .seconds(60)) }
        try? await Task.sleep(for: .milliseconds(20))
        signal.fire()
        #expect(await other.value)
    }

    @Test("a value: every waiter gets the first one; later fulfils change nothing; a wait after it returns at once")
    func firstValueWins() async {
        let port = OneShot<Int>()
        #expect(port.value == nil && !port.isFulfilled)
        await withTaskGroup(of: Int?.self) { group in
            for _ in 0..<8 { group.addTask { await port.wait() } }
            try? await Task.sleep(for: .milliseconds(30))
            #expect(port.fulfill(8080))
            #expect(!port.fulfill(9090))
            for await value in group { #expect(value == 8080) }
        }
        #expect(await port.wait() == 8080)
        #expect(await port.wait(upTo: .zero) == 8080)
        #expect(port.value == 8080)
    }

    @Test("a failure travels as a Result: the waiter gets the error; a wait without a timeout ends at cancellation with nil")
    func resultsAndCancellation() async throws {
        struct Failed: Error {}
        let started = OneShot<Result<Int, any Error>>()
        let waiter = Task { await started.wait() }
        try await Task.sleep(for: .milliseconds(20))
        started.fulfill(.failure(Failed()))
        let result = try #require(await waiter.value)
        #expect(throws: Failed.self) { try result.get() }

        let never = OneShot<Int>()
        let cancelled = Task { await never.wait() }
        try await Task.sleep(for: .milliseconds(20))
        cancelled.cancel()
        #expect(await cancelled.value == nil)
        // Fulfilled after a waiter gave up: later waiters still get it.
        never.fulfill(1)
        #expect(await never.wait() == 1)
    }
}

@testable import SignetHTTP
import Synchronization
import Testing

/// The one task behind every webhook body and answer deadline.
@Suite struct DeadlineSweeperTests {
    @Test("a due action runs once, a cancelled one never, and nothing is left pending")
    func dueAndCancelled() async throws {
        let sweeper = DeadlineSweeper(tick: .milliseconds(10))
        let ran = Mutex<[String]>([])
        _ = sweeper.schedule(after: .milliseconds(30)) { ran.withLock { $0.append("due") } }
        let cancelled = sweeper.schedule(after: .milliseconds(30)) { ran.withLock { $0.append("cancelled") } }
        _ = sweeper.schedule(after: .seconds(3600)) { ran.withLock { $0.append("far") } }
        sweeper.cancel(cancelled)
        #expect(sweeper.pending == 2)
        let deadline = ContinuousClock.now + .seconds(120)
        while ran.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(ran.withLock { $0 } == ["due"])
        #expect(sweeper.pending == 1)
    }

    @Test("an action is not run before its deadline")
    func notEarly() async throws {
        let sweeper = DeadlineSweeper(tick: .milliseconds(5))
        let start = ContinuousClock.now
        let ranAt = Mutex<ContinuousClock.Instant?>(nil)
        _ = sweeper.schedule(after: .milliseconds(200)) { ranAt.withLock { $0 = ContinuousClock.now } }
        let deadline = start + .seconds(120)
        while ranAt.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let at = try #require(ranAt.withLock { $0 })
        #expect(at - start >= .milliseconds(200))
        #expect(sweeper.pending == 0)
    }
}

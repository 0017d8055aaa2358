import SignetCore
import Synchronization
public import Testing

/// Runs a test on a thread of its own instead of Swift's cooperative pool: for synchronous
/// tests that wait for `signet` and other child processes.
///
/// The pool has one thread per core (two in CI) and every test shares it. A synchronous test
/// blocks its pool thread for as long as its children run, so two of them at once stalled
/// every async test (Kafka group joins, time limits) for tens of seconds. With this trait
/// the test waits for a slot (at most ``OwnThreadTrait/slots`` such tests at once, about as
/// many as the pool used to allow, so the machine is not flooded with child processes)
/// without holding a pool thread, then runs on a serial dispatch queue of its own (see
/// `BlockingExecutor`; serial queues get a thread even when the pool is busy).
public struct OwnThreadTrait: TestTrait, TestScoping {
    /// Tests with this trait that run at once.
    public static let slots = 3
    private static let gate = AsyncGate(slots: slots)

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.gate.enter()
        defer { Self.gate.leave() }
        try await withTaskExecutorPreference(BlockingExecutor(label: "signet.test.own-thread")) {
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs the test off the cooperative pool, a few at a time (``OwnThreadTrait``).
    public static var ownThread: Self { Self() }
}

/// A counting semaphore whose waiters suspend instead of blocking a thread.
final class AsyncGate: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(slots: Int) {
        state = Mutex(State(free: slots))
    }

    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiters.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

import Synchronization

/// A one-shot event that many tasks wait on: fired once (a stop was requested), it wakes every
/// waiter and every later wait returns at once.
///
/// For a step that waits on the outside world with backoff (a held revocation check): it waits
/// "the backoff, or until the stop", so a stop request ends the wait instead of the backoff.
public final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waiters cancelled before they registered their continuation.
        var cancelledEarly: Set<Int> = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether ``fire()`` was called.
    public var isFired: Bool { state.withLock { $0.fired } }

    /// Fires the signal: every waiter wakes; later waits return at once. Again: nothing.
    public func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until the signal fires, `timeout` passes or the task is cancelled, whichever comes
    /// first; true when the signal fired.
    public func wait(upTo timeout: Duration) async -> Bool {
        if isFired { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitUntilFired() }
            await group.next()
            group.cancelAll()
        }
        return isFired
    }

    /// Returns once fired, or when the task is cancelled.
    private func waitUntilFired() async {
        let id = state.withLock { state -> Int? in
            guard !state.fired else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || state.cancelledEarly.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Not registered yet (or already resumed by fire, which leaves nothing to do).
                if !state.fired { state.cancelledEarly.insert(id) }
                return nil
            }
            waiter?.resume()
        }
    }
}

import Synchronization

/// A value set once that any number of tasks wait for: the one way Signet waits for a single
/// event (a listener's port, a server that started or failed, a runner's result, a stop).
///
/// The first ``fulfill(_:)`` wins and wakes every waiter; later waits return at once; later
/// fulfils change nothing. A wait also ends when its task is cancelled (then it returns nil),
/// so no waiter outlives the task that waits.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var fulfilled = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Value?, Never>] = [:]
        /// Waiters cancelled before they registered their continuation.
        var cancelledEarly: Set<Int> = []
    }

    private let state = Mutex(State())

    package init() {}

    /// The value, once fulfilled; nil before.
    package var value: Value? { state.withLock { $0.value } }

    /// Whether ``fulfill(_:)`` was called.
    package var isFulfilled: Bool { state.withLock { $0.fulfilled } }

    /// Sets the value and wakes every waiter with it. False, changing nothing, when the value
    /// was set already (the first one stands).
    @discardableResult
    package func fulfill(_ value: Value) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Value?, Never>]? in
            guard !state.fulfilled else { return nil }
            state.fulfilled = true
            state.value = value
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value once fulfilled; nil when the task is cancelled first.
    package func wait() async -> Value? {
        let id = state.withLock { state -> Int? in
            guard !state.fulfilled else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return value }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let now = state.withLock { state -> Value?? in
                    if state.fulfilled { return .some(state.value) }
                    if state.cancelledEarly.remove(id) != nil { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                // Not registered yet (or already resumed by fulfil, which leaves nothing to do).
                if !state.fulfilled { state.cancelledEarly.insert(id) }
                return nil
            }
            waiter?.resume(returning: nil)
        }
    }

    /// The value once fulfilled; nil when `timeout` passes or the task is cancelled first.
    package func wait(upTo timeout: Duration) async -> Value? {
        if let value { return value }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { _ = await self.wait() }
            await group.next()
            group.cancelAll()
        }
        return value
    }
}

/// A stop request that steps waiting on the outside world with backoff (a held revocation
/// check) also wait for: "the backoff, or until the stop".
package typealias StopSignal = OneShot<Void>

extension OneShot where Value == Void {
    /// Fires the signal: every waiter wakes; later waits return at once. Again: nothing.
    package func fire() { fulfill(()) }

    /// Whether ``fire()`` was called.
    package var isFired: Bool { isFulfilled }

    /// Whether the signal fired within `timeout` (false also when the task was cancelled).
    package func fired(within timeout: Duration) async -> Bool {
        await wait(upTo: timeout) != nil
    }
}

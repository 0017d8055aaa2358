import Synchronization

/// Wakes the one task of a ``ForwardDeliverer`` that waits for work: a wake while nobody waits
/// is kept for the next wait, so none is lost; a spurious wake-up only costs one more look at
/// the queue.
final class ForwardWakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The wait was cancelled before it registered its continuation.
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Ends the current wait, or the next one at once.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at a wake, after `timeout`, or when the task is cancelled. One caller at a time.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.nextWake() }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextWake() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.pending || state.cancelled {
                        state.pending = false
                        state.cancelled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter else {
                    state.cancelled = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}

import Synchronization

/// Runs actions at deadlines, with one task for all of them.
///
/// Every webhook request has two deadlines (its body must arrive within `body_timeout`, its
/// answer within `response_timeout`) that are almost never reached. A sleeping `Task` per
/// deadline costs a task, a timer and a wake-up on cancellation for every request; at a few
/// thousand requests a second that showed up as context switches in profiles. Here a
/// deadline is a dictionary entry, and one task wakes every `tick` while any are pending
/// (and ends when none are), so an action runs at most one tick late.
final class DeadlineSweeper: Sendable {
    /// Identifies a scheduled action, to cancel it.
    struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        var sweeping = false
    }

    /// How late an action may run.
    let tick: Duration
    private let state = Mutex(State())

    init(tick: Duration = .milliseconds(50)) {
        self.tick = tick
    }

    /// Runs `action` once `delay` has passed, unless cancelled first. `action` runs on the
    /// sweeper's task, outside any lock of the sweeper.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
        let deadline = ContinuousClock.now + delay
        let (id, startSweeping) = state.withLock { state in
            state.nextID += 1
            state.entries[state.nextID] = Entry(deadline: deadline, action: action)
            defer { state.sweeping = true }
            return (state.nextID, !state.sweeping)
        }
        if startSweeping { Task { await self.sweep() } }
        return Token(id: id)
    }

    /// Drops the action if it has not run yet.
    func cancel(_ token: Token) {
        _ = state.withLock { $0.entries.removeValue(forKey: token.id) }
    }

    /// Scheduled actions not yet run or cancelled.
    var pending: Int { state.withLock { $0.entries.count } }

    private func sweep() async {
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let due: [@Sendable () -> Void]? = state.withLock { state in
                guard !state.entries.isEmpty else {
                    state.sweeping = false
                    return nil
                }
                let dueIDs = state.entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
                return dueIDs.compactMap { state.entries.removeValue(forKey: $0)?.action }
            }
            guard let due else { return }
            for action in due { action() }
        }
    }
}

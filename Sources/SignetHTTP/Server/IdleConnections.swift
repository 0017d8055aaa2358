import Metrics
import Synchronization

/// One listener's keep-alive connections that sit between requests, so that a listener
/// with every slot in use closes the longest-idle one for a waiting client instead of
/// making it wait for that connection's `read_timeout` (nginx does the same with its
/// reusable connections).
///
/// A connection counts as idle from the moment its last answer is written until the next
/// request head arrives; one that never sent a request is not idle (its request may be on
/// the way). ``ConnectionGuardHandler`` marks its connection idle or busy from the
/// connection's event loop; ``ConnectionLimit`` asks for a slot from the server's accept
/// loop; the lock makes both sides agree on which connections may go.
final class IdleConnections: Sendable {
    /// Closes the connection on its own event loop if it is still idle there (a request head
    /// may have arrived since it was chosen) and calls `done` with whether it did.
    typealias Evict = @Sendable (_ done: @escaping @Sendable (Bool) -> Void) -> Void

    /// Names the listener in the metric (`webhook`, `http`).
    let listener: String
    /// `signet_http_idle_evictions_total{listener}`: idle connections closed to make room.
    private let evictions: Counter
    private let state = Mutex(State())

    private struct State {
        var nextID = 0
        /// Orders the idle connections: the smallest mark has been idle longest.
        var nextMark: UInt64 = 0
        var idle: [Int: (mark: UInt64, evict: Evict)] = [:]
        /// Slots asked for when no connection was idle: that many connections close as they
        /// turn idle. More than one when the accept loop took several connections in one read
        /// past the limit: each must go before the listener accepts again.
        var slotsWanted = 0
    }

    init(listener: String, metrics: any MetricsFactory = MetricsSystem.factory) {
        self.listener = listener
        evictions = Counter(label: "signet_http_idle_evictions_total", dimensions: [("listener", listener)], factory: metrics)
    }

    /// A new connection's key for the other calls.
    func register() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// The connection's answer is written and no request is open; `evict` closes it.
    func markIdle(_ id: Int, evict: @escaping Evict) {
        let now = state.withLock { state in
            if state.slotsWanted > 0 {
                state.slotsWanted -= 1
                return true
            }
            state.idle[id] = (state.nextMark, evict)
            state.nextMark += 1
            return false
        }
        if now { run(evict) }
    }

    /// A request head arrived, or the connection closed.
    func markBusy(_ id: Int) {
        _ = state.withLock { $0.idle.removeValue(forKey: id) }
    }

    /// Every slot is in use: closes the longest-idle connection, or the next one to turn idle.
    /// Answers whether one is being closed now.
    @discardableResult
    func freeSlot() -> Bool {
        let victim = state.withLock { state -> Evict? in
            guard let oldest = state.idle.min(by: { $0.value.mark < $1.value.mark }) else {
                state.slotsWanted += 1
                return nil
            }
            state.idle[oldest.key] = nil
            return oldest.value.evict
        }
        guard let victim else { return false }
        run(victim)
        return true
    }

    /// The listener is below its limit again: no connection needs to go.
    func slotFreed() {
        state.withLock { $0.slotsWanted = 0 }
    }

    private func run(_ evict: Evict) {
        evict { [self] closed in
            // One that took a request meanwhile stays; the next longest-idle goes instead.
            if closed { evictions.increment() } else { freeSlot() }
        }
    }
}

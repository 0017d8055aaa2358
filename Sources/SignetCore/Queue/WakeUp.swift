/// Wakes one waiting loop early: a loop that works every so often (a sweep, a delivery poll)
/// waits "until the deadline, or until someone has work for it now". A wake while the loop is
/// busy is kept for its next wait; wakes in between coalesce into one.
///
/// The rules are the ``RecordQueue``'s (a lingering take, its deadline, a wake), already tested
/// there; no element ever passes.
package final class WakeUp: Sendable {
    private let queue = RecordQueue<Never>(capacity: 1)

    package init() {}

    /// Ends the current wait, or the next one at once.
    package func wake() {
        queue.wake()
    }

    /// Waits until ``wake()`` is called (or was, since the last wait) or `deadline` passes:
    /// true when woken. Throws CancellationError when the task is cancelled.
    @discardableResult
    package func wait(until deadline: ContinuousClock.Instant) async throws -> Bool {
        switch try await queue.take(linger: .until(deadline)) {
        case .woken: true
        case .elements, nil: false
        }
    }

    /// Waits until woken or `duration` passed: true when woken.
    @discardableResult
    package func wait(for duration: Duration) async throws -> Bool {
        try await wait(until: .now + duration)
    }
}

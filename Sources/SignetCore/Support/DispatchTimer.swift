package import Dispatch

/// The one timer Signet uses off an event loop: a Dispatch timer source on a queue, once or
/// repeating, cancellable from any thread, cancelled when released.
///
/// Where timers live (docs/architecture.md): a connection's deadlines on its event loop
/// (NIO's `scheduleTask`, cancelled for free); everything else here: a queue's linger
/// deadline (``RecordQueue``), a stage's tick (``StageTicker``), work on a blocking executor's
/// thread (``BlockingExecutor/schedule(every:_:)``: the Kafka member's keep-alive), the
/// PostgreSQL lease's renewal. Not a sleeping task: a timer needs no task to be scheduled to
/// fire, so a busy cooperative pool does not delay it, and cancelling it costs nothing.
///
/// `@unchecked Sendable` is sound: the only state is the dispatch source, whose `cancel()`
/// Dispatch documents as safe from any thread; it is never mutated after `init`.
package final class DispatchTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer

    private init(after delay: Duration, repeating interval: Duration?, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        let start = DispatchTime.now() + .nanoseconds(Int(clamping: max(0, delay.clampedNanoseconds)))
        if let interval {
            source.schedule(deadline: start, repeating: .nanoseconds(Int(clamping: max(1, interval.clampedNanoseconds))))
        } else {
            source.schedule(deadline: start)
        }
        source.setEventHandler(handler: body)
        source.resume()
    }

    /// Runs `body` on `queue` once `delay` has passed, unless cancelled (or released) first.
    package static func once(after delay: Duration, on queue: DispatchQueue = .global(), _ body: @escaping @Sendable () -> Void) -> DispatchTimer {
        DispatchTimer(after: delay, repeating: nil, on: queue, body)
    }

    /// Runs `body` on `queue` every `interval` (the first after one interval) until cancelled.
    package static func repeating(every interval: Duration, on queue: DispatchQueue = .global(), _ body: @escaping @Sendable () -> Void) -> DispatchTimer {
        DispatchTimer(after: interval, repeating: interval, on: queue, body)
    }

    /// No more runs once this returns, except one already started.
    package func cancel() {
        source.cancel()
    }

    deinit {
        source.cancel()
    }
}

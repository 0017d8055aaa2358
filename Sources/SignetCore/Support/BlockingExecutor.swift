import Dispatch

/// The one sanctioned way to run blocking work in Signet: a serial dispatch queue, usable as
/// a task executor or to run one blocking call.
///
/// A serial queue owns no thread: Dispatch runs its blocks one at a time, in order, on a worker
/// thread of its own pool (a different one from block to block, possibly), and lends other
/// queues more workers while one blocks. What matters is which threads it never uses: Swift's
/// cooperative pool and NIO's event loops.
///
/// Swift's cooperative pool has one thread per core (two here), shared by the runner's
/// hand-offs and delivery loop, every sink's delivery reports and the service-mode sweeps
/// (the webhook's answers run on their connections' event loops). A `write(2)` plus
/// `fsync`, a SQLite page read, a PostgreSQL round trip or a librdkafka poll on it stalls
/// all of those. So whatever blocks runs on a `BlockingExecutor`: stages as their task
/// executor (`addTask(executorPreference:)`), the runner's own calls into components (open,
/// close, acknowledge, outbox redelivery) on one of its own, sources, sinks and the admin
/// API's store reads through ``run(_:)``. Each owner keeps its own executor, so the calls it makes stay in
/// order and never overlap, as a serial queue's blocks do (the same idea as swift-nio's
/// `NIOThreadPool.runIfActive`, with one queue per owner).
package final class BlockingExecutor: TaskExecutor {
    private let queue: DispatchQueue
    /// Marks each executor's queue with its label, so code can ask where it runs (``current``).
    private static let labelKey = DispatchSpecificKey<String>()
    /// Marks each executor's queue with the executor itself, so ``runInPlace(_:)`` knows a
    /// caller already on it.
    private static let identityKey = DispatchSpecificKey<ObjectIdentifier>()

    /// - Parameter label: the dispatch queue's label (shows in thread names and crash logs).
    package init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.labelKey, value: label)
        queue.setSpecific(key: Self.identityKey, value: ObjectIdentifier(self))
    }

    /// The label of the `BlockingExecutor` whose thread runs the caller; nil anywhere else
    /// (Swift's cooperative pool included): for tests that check blocking work is off the pool.
    package static var current: String? { DispatchQueue.getSpecific(key: labelKey) }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Runs `body` on this executor's thread, after whatever was submitted before it, and
    /// returns its result; the calling task is suspended meanwhile, not blocking its thread.
    package func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Swift.Result { try body() }) }
        }
    }

    /// Runs `body` in order with this executor's work, as ``run(_:)`` does, but on the caller's
    /// thread when the caller already runs on a `BlockingExecutor` (a stage's own thread, which
    /// may block): it then waits for this executor's earlier work in place, and no thread is
    /// woken to run `body` and then the caller again. For a short call whose caller has nothing
    /// else to do meanwhile (a sink's write during a delivery); not for a wait of unknown
    /// length, which would hold the caller's executor from its other tasks (a Kafka poll).
    package func runInPlace<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        guard Self.current != nil else { return try await run(body) }
        // A serial queue never runs two blocks at once, so this keeps the order and exclusion
        // `run` gives; a caller on this very queue runs `body` directly (sync would deadlock).
        if DispatchQueue.getSpecific(key: Self.identityKey) == ObjectIdentifier(self) { return try body() }
        return try queue.sync(execute: body)
    }

    /// Submits `body` without waiting for it (a close that must not delay its caller).
    package func submit(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Runs `body` on this executor's thread every `interval`, in order with everything else
    /// submitted, until the returned timer is cancelled: for work that must go on when no task
    /// calls in, and must not wait for Swift's cooperative pool to run a sleeping task (a Kafka
    /// member that serves its group while the pipeline behind it is stalled).
    package func schedule(every interval: Duration, _ body: @escaping @Sendable () -> Void) -> DispatchTimer {
        DispatchTimer.repeating(every: interval, on: queue, body)
    }
}

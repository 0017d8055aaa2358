import Dispatch

/// A task executor backed by one serial dispatch queue (its own thread), for tasks that
/// block: use it with `withTaskExecutorPreference` or `addTask(executorPreference:)`.
///
/// Stages block their thread on purpose: SQLite and PostgreSQL round trips, OpenSSL work
/// spread with `concurrentPerform`. On Swift's cooperative pool (one thread per core) such
/// a stage would stall every other task of the process: the source's hand-offs, the sinks'
/// delivery reports, the HTTP server. Running each on its own executor keeps the pool free.
public final class StageExecutor: TaskExecutor {
    private let queue: DispatchQueue

    /// - Parameter label: the dispatch queue's label (shows in thread names and crash logs).
    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

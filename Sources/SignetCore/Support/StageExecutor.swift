import Dispatch

/// A task executor backed by one serial dispatch queue (its own thread).
///
/// Stages block their thread on purpose: SQLite commits, OpenSSL work spread with
/// `concurrentPerform`. On Swift's cooperative pool (one thread per core) such a stage
/// would stall every other task of the pipeline: the source's hand-offs, the sinks'
/// delivery reports. Running each stage's task on its own executor keeps the pool free.
final class StageExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

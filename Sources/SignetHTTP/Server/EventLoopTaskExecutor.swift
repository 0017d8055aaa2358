import NIOCore

/// A task executor that runs its jobs on one NIO event loop.
///
/// A connection's task that prefers its channel's loop reads each request and writes each
/// answer on the thread that owns the socket: the request wakes no thread of Swift's
/// cooperative pool, and the answer does not hop back to the loop to be written. The
/// record's commit, on a stage's thread, then wakes the loop once, instead of waking a pool
/// thread that wakes the loop. Whatever runs on it must not block: it holds up every
/// connection of that loop (the webhook's handler only checks the request, queues the body
/// and awaits; store reads hop to their own ``SignetCore/BlockingExecutor``).
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // From the loop's own thread this only queues the job behind the current one.
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

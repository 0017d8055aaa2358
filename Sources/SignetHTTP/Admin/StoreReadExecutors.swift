import Synchronization
import SignetCore

/// The admin API's store reads, spread over a few ``SignetCore/BlockingExecutor``s in turn.
///
/// One serial executor answered one request at a time: a PostgreSQL answer is two round
/// trips, so the API stopped near 1,000 answers a second however many connections the pool
/// had and however idle the machine was (`scripts/bench_scale.py`). Several let the store's
/// pool and SQLite's readers work in parallel; each is still a thread off Swift's cooperative
/// pool, so the webhook and /readyz keep being served while reads block.
final class StoreReadExecutors: Sendable {
    private let executors: [BlockingExecutor]
    private let turn = Atomic<Int>(0)

    /// - Parameter count: how many reads may block at once (at least 1).
    init(label: String, count: Int) {
        executors = (0..<max(1, count)).map { BlockingExecutor(label: "\(label).\($0)") }
    }

    /// The executor for the next read.
    func next() -> BlockingExecutor {
        let index = turn.wrappingAdd(1, ordering: .relaxed).oldValue
        return executors[Int(index.magnitude % UInt(executors.count))]
    }
}

import Dispatch
import Testing

/// Runs each test of a suite, and the tasks it starts, on threads of its own (a concurrent
/// dispatch queue, which adds a thread when one blocks) rather than on Swift's cooperative pool.
///
/// The pool has one thread per core (two in CI). Many tests block a pool thread while a
/// `signet` child runs; when two do at once, every async test stalls until one finishes, and
/// a Kafka consumer that is not polled meanwhile loses its group. Tests whose timing depends on
/// being scheduled (consumer groups, in-process servers) take `.ownThread`.
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(QueueExecutor(label: "signet.test.\(test.name)")) {
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// See ``OwnThreadTrait``.
    public static var ownThread: Self { Self() }
}

/// A task executor on a concurrent dispatch queue.
final class QueueExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

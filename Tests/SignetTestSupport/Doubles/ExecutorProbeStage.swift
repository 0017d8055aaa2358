public import SignetCore
import Synchronization

/// Passes records through and notes, for each call the runner makes (open, process,
/// acknowledge, undeliveredOutputs, close), which ``BlockingExecutor`` ran it: nil means
/// Swift's cooperative pool, where a stage's blocking work must never run.
public final class ExecutorProbeStage: Stage {
    public let name = "probe"
    private let calls = Mutex<[(call: String, executor: String?)]>([])

    public init() {}

    public func open() async throws { note("open") }
    public func close() async throws { note("close") }
    public func process(_ batch: inout RecordBatch) async throws { note("process") }
    public func acknowledge(_ batch: RecordBatch) async throws { note("acknowledge") }
    public func undeliveredOutputs() async throws -> RecordBatch? {
        note("undeliveredOutputs")
        return nil
    }

    /// Every call so far, in order, with the label of the executor that ran it.
    public var executors: [(call: String, executor: String?)] { calls.withLock { $0 } }

    private func note(_ call: String) {
        let executor = BlockingExecutor.current
        calls.withLock { $0.append((call, executor)) }
    }
}

public import Logging
public import ServiceLifecycle
public import SignetCore
import Synchronization

/// Runs a `PipelineRunner` as a ServiceLifecycle `Service`.
///
/// Graceful shutdown asks the runner to stop: the source stops taking input (the
/// webhook answers 503), in-flight batches are delivered and committed, then ``run()``
/// returns. Cancellation (the group's shutdown timeout passed) returns at once without
/// waiting for the runner: what was not committed is read again, or retried by its
/// sender, after a restart.
public final class PipelineService: Service, CustomStringConvertible {
    /// How the run ended.
    public enum Outcome: Sendable {
        /// The source ended or was drained; everything read was committed.
        case finished(RunSummary)
        /// Cancelled before the drain finished (shutdown timeout).
        case abandoned
    }

    public let runner: PipelineRunner
    /// The runner's result, or cancellation: the first of the two wins.
    private let result = OneShot<Result<RunSummary, any Error>>()
    private let finished = Mutex<Outcome?>(nil)
    private let draining = Atomic<Bool>(false)

    private let logger: Logger

    public init(runner: PipelineRunner, logger: Logger = Logger(label: "signet")) {
        self.runner = runner
        self.logger = logger
    }

    public var description: String { "pipeline" }

    /// Whether graceful shutdown has begun: for a readiness endpoint, which should answer
    /// 503 from here on while the pipeline drains.
    package var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// The outcome once ``run()`` returned; nil before.
    public var outcome: Outcome? { finished.withLock { $0 } }

    public func run() async throws {
        // The group traps its signals before it starts a service: one caught while the
        // command was still loading now reaches it.
        StartupSignals.redeliver()
        let runner = runner
        // The runner works in its own task so cancellation can return without it.
        let work = Task {
            let result: Result<RunSummary, any Error>
            do { result = .success(try await runner.run()) } catch { result = .failure(error) }
            self.result.fulfill(result)
        }
        do {
            let summary = try await withTaskCancellationHandler {
                try await withGracefulShutdownHandler {
                    // Nil only when cancelled, which the handler below also delivers.
                    try await (self.result.wait() ?? .failure(CancellationError())).get()
                } onGracefulShutdown: {
                    self.draining.store(true, ordering: .relaxed)
                    self.logger.notice(
                        "shutting down: intake stopped, draining in-flight records (up to \(runner.pipeline.settings.shutdownTimeout))")
                    Task { await runner.requestStop() }
                }
            } onCancel: {
                self.result.fulfill(.failure(CancellationError()))
            }
            finished.withLock { $0 = .finished(summary) }
        } catch is CancellationError {
            work.cancel()
            finished.withLock { $0 = .abandoned }
        }
    }
}

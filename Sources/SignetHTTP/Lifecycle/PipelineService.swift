public import Logging
public import ServiceLifecycle
public import SignetCore
import Synchronization

/// Runs a ``PipelineRunner`` as a ServiceLifecycle `Service`.
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
    private let finish = Mutex<FinishState>(FinishState())
    private let draining = Atomic<Bool>(false)

    private struct FinishState: ~Copyable {
        var waiter: CheckedContinuation<RunSummary, any Error>?
        var result: Result<RunSummary, any Error>?
        var outcome: Outcome?
    }

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
    public var outcome: Outcome? { finish.withLock { $0.outcome } }

    public func run() async throws {
        // The group traps its signals before it starts a service: one caught while the
        // command was still loading now reaches it.
        StartupSignals.redeliver()
        let runner = runner
        // The runner works in its own task so cancellation can return without it.
        let work = Task {
            let result: Result<RunSummary, any Error>
            do { result = .success(try await runner.run()) } catch { result = .failure(error) }
            deliver(result)
        }
        do {
            let summary = try await withTaskCancellationHandler {
                try await withGracefulShutdownHandler {
                    try await waitForRunner()
                } onGracefulShutdown: {
                    self.draining.store(true, ordering: .relaxed)
                    self.logger.notice(
                        "shutting down: intake stopped, draining in-flight records (up to \(runner.pipeline.settings.shutdownTimeout))")
                    Task { await runner.requestStop() }
                }
            } onCancel: {
                deliver(.failure(CancellationError()))
            }
            finish.withLock { $0.outcome = .finished(summary) }
        } catch is CancellationError {
            work.cancel()
            finish.withLock { $0.outcome = .abandoned }
        }
    }

    private func waitForRunner() async throws -> RunSummary {
        try await withCheckedThrowingContinuation { continuation in
            finish.withLock { state in
                if let result = state.result {
                    continuation.resume(with: result)
                } else {
                    state.waiter = continuation
                }
            }
        }
    }

    /// The first of the runner's result and cancellation wins.
    private func deliver(_ result: Result<RunSummary, any Error>) {
        finish.withLock { state in
            guard state.result == nil else { return }
            state.result = result
            state.waiter?.resume(with: result)
            state.waiter = nil
        }
    }
}

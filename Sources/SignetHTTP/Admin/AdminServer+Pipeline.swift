import Logging
import Prometheus
import ServiceLifecycle
import SignetCore

extension AdminServer {
    /// The listener a pipeline's `http:` section asks for, or nil when it has none.
    public static func make(
        for runner: PipelineRunner, environment: [String: String],
        registry: PrometheusCollectorRegistry = PrometheusBackend.registry,
        logger: Logger = Logger(label: "signet.http")
    ) throws -> AdminServer? {
        guard let configuration = try AdminConfiguration(pipeline: runner.pipeline, environment: environment) else {
            return nil
        }
        return try AdminServer(
            configuration: configuration, pipeline: runner.pipeline, health: runner.health, registry: registry,
            logger: logger)
    }

    /// Runs `runner` with this listener beside it, in one ServiceGroup; the listener
    /// shuts down gracefully once the run ends. If the listener fails (its port is
    /// taken), the pipeline is asked to stop and the listener's error is thrown.
    public func serve(beside runner: PipelineRunner) async throws -> RunSummary {
        let group = ServiceGroup(
            configuration: .init(services: [self], gracefulShutdownSignals: [], logger: Logger(label: "signet.http")))
        return try await withThrowingTaskGroup(of: RunSummary?.self) { tasks in
            tasks.addTask {
                do {
                    try await group.run()
                } catch {
                    await runner.requestStop()
                    throw error
                }
                return nil
            }
            tasks.addTask { try await runner.run() }
            var summary: RunSummary?
            while let finished = try await tasks.next() {
                if let finished {
                    summary = finished
                    await group.triggerGracefulShutdown()
                }
            }
            guard let summary else { throw AdminServerError.stoppedEarly }
            return summary
        }
    }
}

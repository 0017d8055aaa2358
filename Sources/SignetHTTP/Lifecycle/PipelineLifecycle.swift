public import Logging
public import ServiceLifecycle
public import SignetCore
public import UnixSignals

/// Runs a pipeline and any other services (an admin HTTP server, say) in one
/// ServiceLifecycle `ServiceGroup` that shuts down gracefully on SIGTERM/SIGINT.
///
/// The pipeline is listed last, so it is shut down first: intake stops (the webhook
/// answers 503 with Retry-After), in-flight records are delivered and committed, and
/// only then do the other services stop (a readiness endpoint can say "draining"
/// meanwhile). If the drain takes longer than `shutdown_timeout` the group is cancelled
/// and ``run()`` reports ``PipelineService/Outcome/abandoned``: nothing uncommitted was
/// acknowledged, so it is read again (or retried by Apple) after a restart.
///
/// When the source ends by itself (stdin reached its end) the other services are shut
/// down gracefully too and ``run()`` returns.
public struct PipelineLifecycle: Sendable {
    public let pipeline: PipelineService
    public var services: [any Service]
    public var signals: [UnixSignal]
    public var shutdownTimeout: Duration
    public var logger: Logger

    /// - Parameters:
    ///   - runner: the pipeline to run.
    ///   - services: what runs beside it and stops after it.
    ///   - signals: what starts a graceful shutdown (none in tests that call ``PipelineService`` directly).
    ///   - logger: where it logs what it does and what fails.
    ///   - shutdownTimeout: how long the drain may take (the pipeline's `settings.shutdown_timeout`).
    public init(
        runner: PipelineRunner, services: [any Service] = [], signals: [UnixSignal] = [.sigterm, .sigint],
        shutdownTimeout: Duration? = nil, logger: Logger = Logger(label: "signet")
    ) {
        self.pipeline = PipelineService(runner: runner, logger: logger)
        self.services = services
        self.signals = signals
        self.shutdownTimeout = shutdownTimeout ?? runner.pipeline.settings.shutdownTimeout
        self.logger = logger
    }

    /// Runs until the source ends, a signal's drain completes, or the shutdown timeout
    /// passes. Throws when the pipeline (or another service) fails.
    public func run() async throws -> PipelineService.Outcome {
        var entries = services.map {
            ServiceGroupConfiguration.ServiceConfiguration(
                service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        // SIGHUP reopens the file sinks (log rotation) instead of ending the process, when
        // this lifecycle owns the process's signals (it handles SIGTERM, as `signet run`
        // does); not in an embedder's or a test's lifecycle that handles others.
        if signals.contains(.sigterm), let reopener = SinkReopener(pipeline: pipeline.runner.pipeline, logger: logger) {
            entries.append(
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: reopener, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
        }
        entries.append(
            ServiceGroupConfiguration.ServiceConfiguration(
                service: pipeline, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup))
        var configuration = ServiceGroupConfiguration(services: entries, gracefulShutdownSignals: signals, logger: logger)
        configuration.maximumGracefulShutdownDuration = shutdownTimeout
        // The pipeline returns at once when cancelled; the other services should too.
        configuration.maximumCancellationDuration = .seconds(10)
        try await ServiceGroup(configuration: configuration).run()
        return pipeline.outcome ?? .abandoned
    }
}

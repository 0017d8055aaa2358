public import Logging
public import Prometheus
import ServiceLifecycle
public import SignetCore

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
}

public import Logging
public import Prometheus
import ServiceLifecycle
import SignetAppStoreAPI
import SignetConsole
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
        // The In-App Purchase key from the variables `signet offers sign` reads.
        let signer = Result<OfferSigner, any Error> {
            OfferSigner(credentials: try AppStoreAPIConfiguration.fromEnvironment(environment).credentials)
        }
        let console = try Console.make(
            for: runner.pipeline, apiToken: configuration.apiToken, environment: environment, summary: { runner.currentSummary },
            metrics: PrometheusMetricsFactory(registry: registry), logger: Logger(label: "signet.console"))
        return try AdminServer(
            configuration: configuration, pipeline: runner.pipeline, health: runner.health, registry: registry, offerSigner: signer,
            console: console, logger: logger)
    }
}

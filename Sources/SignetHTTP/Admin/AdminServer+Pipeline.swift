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
            deadLetters: consoleDeadLetters(runner.pipeline), metrics: PrometheusMetricsFactory(registry: registry), logger: Logger(label: "signet.console"))
        return try AdminServer(
            configuration: configuration, pipeline: runner.pipeline, health: runner.health, registry: registry, offerSigner: signer,
            console: console, logger: logger)
    }


    /// The console's view of the dead letters: a `json` file sink's, replayed through the
    /// pipeline's own webhook when it reads one.
    static func consoleDeadLetters(_ pipeline: Pipeline) -> ConsoleDeadLetters? {
        guard pipeline.deadLetter.format == .json, let file = pipeline.deadLetter.sink as? FileSink else { return nil }
        var replay: (@Sendable ([UInt8]) async -> Result<DeadLetterReplayOutcome, ConsoleDeadLetters.ReplayFailure>)?
        if let webhook = pipeline.source as? HTTPSource {
            replay = { input in
                guard let bound = webhook.boundAddress else { return .failure(.init("the webhook is not listening")) }
                // A wildcard bind answers on loopback too.
                let host = switch bound.host {
                case "0.0.0.0", "": "127.0.0.1"
                case "::": "::1"
                default: bound.host
                }
                let address = ListenAddress(host: host, port: bound.port)
                let client = WebhookReplayClient(url: "http://\(address)\(webhook.options.path)", patience: .seconds(10))
                let record = Record(raw: input, position: SourcePosition(stream: "console-replay", offset: 0))
                do {
                    return .success(try await client.post([record]))
                } catch {
                    return .failure(.init("the replay failed: \(error)"))
                }
            }
        }
        return ConsoleDeadLetters(file: file.path, replay: replay)
    }
}

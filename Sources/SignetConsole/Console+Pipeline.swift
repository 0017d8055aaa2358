import AppStoreModels
public import Logging
public import Metrics
import SignetAppStoreAPI
public import SignetCore
import SignetAppStorePipeline
import SignetJWS
import SignetState

extension Console {
    /// Why the console cannot start.
    public struct StartFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The console a pipeline's `console:` section asks for, or nil when it has none.
    ///
    /// Credentials come from `console.credentials`, else the `http:` section's API token
    /// (`apiToken`) signs in as the operator `api-token`. Apple is reached with the In-App
    /// Purchase key's variables in `environment`, its answers verified as the pipeline's
    /// verify stage verifies (its roots, bundle id and app Apple ID, either environment: they
    /// only find purchases, which are then read from the store).
    public static func make(
        for pipeline: Pipeline, apiToken: String?, environment: [String: String],
        summary: @escaping @Sendable () -> RunSummary = { RunSummary() }, deadLetters: ConsoleDeadLetters? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory, logger: Logger
    ) throws -> Console? {
        guard let configuration = try ConsoleConfiguration(pipeline: pipeline) else { return nil }
        try ConsoleConfiguration.check(pipeline)
        let credentials: ConsoleCredentials
        if let file = configuration.credentialsFile {
            do {
                credentials = try ConsoleCredentials(contentsOf: file)
            } catch {
                throw StartFailure(description: "console: credentials \(file): \(error)")
            }
        } else if let apiToken, !apiToken.isEmpty {
            credentials = ConsoleCredentials([ConsoleCredential(name: "api-token", role: .operator, token: apiToken)])
        } else {
            throw StartFailure(
                description: "console: nobody could sign in: set console.credentials (a file of `signet console credential` lines) or the http: section's api_token (SIGNET_API_TOKEN)")
        }
        guard let store = pipeline.resources.first(where: { $0.name == configuration.store })?.resource as? StateStoreResource else {
            throw StartFailure(description: "console: store '\(configuration.store)' is not a state store under stores:")
        }
        var apple: ConsoleAppleAccess?
        if let api = try? AppStoreAPIConfiguration.fromEnvironment(environment),
            let verify = pipeline.stages.lazy.compactMap({ $0 as? VerifyStage }).first
        {
            var verification = verify.verifier.configuration
            verification.environments = [.production, .sandbox]
            apple = ConsoleAppleAccess(client: AppStoreServerAPIClient(configuration: api), verifier: try AppStoreVerifier(configuration: verification))
        } else {
            logger.notice("console: no In-App Purchase key (or no verify stage): order ids are not looked up and actions through Apple are off")
        }
        let health = pipeline.stages.lazy.compactMap { $0 as? AppStoreDeliveryHealthStage }.first
        return Console(
            configuration: configuration, credentials: credentials, store: store, apple: apple, summary: summary,
            deliveryHealthPath: { health?.stateFilePath }, deadLetters: deadLetters, metrics: metrics, logger: logger)
    }

    /// Samples the pipeline's counts once a minute for the operations page, until cancelled.
    public func sampleHistory() async {
        await history.sampleEveryMinute()
    }

    /// Stops the App Store client, when there is one.
    public func shutdown() async {
        try? await apple?.client.shutdown()
    }
}

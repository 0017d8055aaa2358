import AppStoreModels
import Foundation
import Logging
import SignetAppStoreAPI
import SignetCore

/// The API settings of a component that calls the App Store Server API (`appstore_history`,
/// `appstore_catch_up`, ...) as written, with the defaults that name environment variables
/// (`${SIGNET_APPSTORE_KEY_ID}`) expanded only when the component opens.
struct AppStoreAPISettings: Sendable {
    /// The spec fields of these settings, shared by every component that calls the API. Each
    /// key is an ``AppStoreAPIConfiguration/Setting``; its default names the variable the
    /// commands read, so a pipeline and `signet backfill` are configured alike.
    static let fields: [ConfigField] = [
        ConfigField("key_id", .string, .default("${SIGNET_APPSTORE_KEY_ID}"), "the In-App Purchase key's id (App Store Connect: Users and Access > Integrations > In-App Purchase)"),
        ConfigField("issuer_id", .string, .default("${SIGNET_APPSTORE_ISSUER_ID}"), "the issuer id shown above the key list"),
        ConfigField("private_key", .string, .default("${SIGNET_APPSTORE_PRIVATE_KEY}"), "path to the key's .p8 file"),
        ConfigField("bundle_id", .string, .default("${SIGNET_BUNDLE_ID}"), "the app's bundle id"),
        ConfigField("environment", .string, .default("${SIGNET_ENVIRONMENT:Sandbox}"), "Sandbox or Production: which host, lookback and rate limit"),
        ConfigField("api_url", .string, .default("${SIGNET_APPSTORE_API_URL:}"), "base URL instead of Apple's host (a proxy, tests); empty: Apple's", advanced: true),
        ConfigField(
            "requests_per_second", .int(1...Int(AppStoreAPIEndpointClass.standard.appleLimit(in: .production))), .optional,
            "requests per second to the history, status and transaction endpoints, for the whole process (default 40 Production, 4 Sandbox); at most Apple's per-app limit: 50 Production, 5 Sandbox",
            advanced: true),
    ]

    /// The values as written (or the spec's defaults), not yet expanded.
    private var values: [AppStoreAPIConfiguration.Setting: String] = [:]
    private var requestsPerSecond: Int?
    /// Where the component sits (`stages[0]`), to name a key in errors.
    private let path: String

    /// - Parameter env: what the environment setting's variables expand to, so a rate above
    ///   Sandbox's limit is reported at its line when the file is loaded (or linted), not
    ///   only when the component opens.
    init(_ config: ParsedConfig, env: [String: String]) throws(ConfigError) {
        path = config.path
        for setting in AppStoreAPIConfiguration.Setting.allCases { values[setting] = try config.string(setting.rawValue) }
        requestsPerSecond = try config.optionalInt("requests_per_second")
        if let requestsPerSecond, let written = try? resolved(values[.environment] ?? "", env) {
            // As the configuration reads it: Production when listed, else Sandbox.
            let environment: AppStoreEnvironment = written.contains("Production") ? .production : .sandbox
            let limit = AppStoreAPIEndpointClass.standard.appleLimit(in: environment)
            if Double(requestsPerSecond) > limit {
                throw config.error(
                    "'\(config.path).requests_per_second' is \(requestsPerSecond), above Apple's limit of \(Int(limit)) requests per second per app in \(environment.rawValue) (Sandbox gets 10% of Production's 50)",
                    key: "requests_per_second")
            }
        }
    }

    /// A client for these settings under `env`, spending the budgets of the pipeline's shared
    /// store when it has one (``AppStoreAPIRateLimiter/forPipeline(_:logger:)``). Components
    /// call it when they open, so a missing key or variable is reported then, not when the
    /// pipeline file is loaded.
    func makeClient(_ env: [String: String], context: ComponentContext) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(
            configuration: configuration(env),
            rateLimiter: .forPipeline(Array(context.resources.values), logger: context.logger), logger: context.logger)
    }

    /// The client's configuration: each key's value expanded from `env`, checked as the
    /// commands' variables are, errors naming the key (`source.issuer_id`).
    func configuration(_ env: [String: String]) throws -> AppStoreAPIConfiguration {
        var expanded: [AppStoreAPIConfiguration.Setting: String] = [:]
        // In the spec's order, so the first unset variable named is always the same one.
        for setting in AppStoreAPIConfiguration.Setting.allCases { expanded[setting] = try resolved(values[setting] ?? "", env) }
        var configuration = try AppStoreAPIConfiguration.from({ expanded[$0] }, naming: { "'\(path).\($0.rawValue)'" })
        if let requestsPerSecond {
            configuration.requestsPerSecond = Double(requestsPerSecond)
            if let problem = configuration.rateProblem(.standard) { throw AppStoreAPIConfigurationError(problem) }
        }
        return configuration
    }

    /// `text` with `${NAME}` and `${NAME:default}` expanded from `env` by Signet's one expander
    /// (a spec default; values written in the file were expanded when it was loaded).
    func resolved(_ text: String, _ env: [String: String]) throws(ConfigError) -> String {
        try Interpolator.expand(text, environment: env, path: path)
    }
}

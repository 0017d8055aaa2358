import AppStoreModels
import Foundation
import Logging
import SignetCore

/// The API settings of a component that calls the App Store Server API (`appstore_history`,
/// `appstore_catch_up`) as written, with the defaults that name
/// environment variables (`${SIGNET_APPSTORE_KEY_ID}`) expanded only when the component opens.
struct AppStoreAPISettings: Sendable {
    /// Each API key of the spec and the variable of ``AppStoreAPIConfiguration/fromEnvironment(_:)``
    /// it stands for, so the source's settings get the same checks and messages as the commands'.
    static let variables = [
        ("key_id", "SIGNET_APPSTORE_KEY_ID"), ("issuer_id", "SIGNET_APPSTORE_ISSUER_ID"),
        ("private_key", "SIGNET_APPSTORE_PRIVATE_KEY"), ("bundle_id", "SIGNET_BUNDLE_ID"),
        ("environment", "SIGNET_ENVIRONMENT"), ("api_url", "SIGNET_APPSTORE_API_URL"),
    ]

    /// The spec fields of these settings, shared by every component that calls the API.
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

    /// The values as written (or the spec's defaults), by variable name.
    var values: [String: String] = [:]
    var requestsPerSecond: Int?

    /// - Parameter env: what the environment setting's variables expand to, so a rate above
    ///   Sandbox's limit is reported at its line when the file is loaded (or linted), not
    ///   only when the component opens.
    init(_ config: ParsedConfig, env: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) {
        for (key, variable) in Self.variables { values[variable] = try config.string(key) }
        requestsPerSecond = try config.optionalInt("requests_per_second")
        if let requestsPerSecond, let written = try? resolved(values["SIGNET_ENVIRONMENT"] ?? "", env) {
            // As fromEnvironment reads it: Production when listed, else Sandbox.
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

    /// The client's configuration, with the defaults' variables expanded from `env`.
    func configuration(_ env: [String: String]) throws -> AppStoreAPIConfiguration {
        var resolved: [String: String] = [:]
        // In the spec's order, so the first missing variable named is always the same one.
        for (_, variable) in Self.variables { resolved[variable] = try self.resolved(values[variable] ?? "", env) }
        var configuration = try AppStoreAPIConfiguration.fromEnvironment(resolved)
        if let requestsPerSecond {
            configuration.requestsPerSecond = Double(requestsPerSecond)
            if let problem = configuration.rateProblem(.standard) { throw AppStoreAPIConfigurationError(problem) }
        }
        return configuration
    }

    /// `text` with `${NAME}` and `${NAME:default}` expanded from `env` (what a default of
    /// the spec may hold; values written in the file were expanded by the loader already).
    func resolved(_ text: String, _ env: [String: String]) throws(AppStoreAPIConfigurationError) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else { break }
            let body = rest[open.upperBound..<close]
            let name = String(body.prefix { $0 != ":" })
            let fallback = body.contains(":") ? String(body.drop { $0 != ":" }.dropFirst()) : nil
            if let value = env[name], !value.isEmpty {
                result += value
            } else if let fallback {
                result += fallback
            } else {
                throw AppStoreAPIConfigurationError("\(name) is not set (needed for the App Store Server API)")
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}

import Foundation
import SignetCore

/// Registers the App Store Server API's pipeline components: the `appstore_history` source
/// (keys: ``ComponentSpec/appStoreHistorySource``).
///
/// Nothing is read from the environment and no credential is loaded until the source opens,
/// so `signet lint` and `signet components` work on a machine without the key.
extension ComponentRegistry {
    public mutating func registerAppStoreAPIComponents() {
        registerSource(.appStoreHistorySource) { config, context in
            let now = WallClock.milliseconds()
            for key in ["start", "end"] {
                if let text = try config.optionalString(key), BackfillWindow.instant(text, now: now) == nil {
                    throw config.error("'\(config.path).\(key)' must be \(BackfillWindow.instantForms), not '\(text)'", key: key)
                }
            }
            let settings = try AppStoreHistorySettings(config)
            let environment = ProcessInfo.processInfo.environment
            var options = AppStoreHistorySource.Options(
                start: try config.string("start"), end: try config.optionalString("end"),
                checkpointPath: try settings.resolved(settings.checkpoint, environment))
            options.onlyFailures = try config.bool("only_failures")
            options.subWindows = try config.int("sub_windows")
            options.parallelism = try config.int("parallelism")
            return AppStoreHistorySource(options: options, logger: context.logger) {
                try AppStoreServerAPIClient(configuration: settings.configuration(environment), logger: context.logger)
            }
        }
    }
}

/// The API settings of an `appstore_history` source as written, with the defaults that name
/// environment variables (`${SIGNET_APPSTORE_KEY_ID}`) expanded only when the source opens.
struct AppStoreHistorySettings: Sendable {
    /// Each API key of the spec and the variable of ``AppStoreAPIConfiguration/fromEnvironment(_:)``
    /// it stands for, so the source's settings get the same checks and messages as the commands'.
    static let variables = [
        ("key_id", "SIGNET_APPSTORE_KEY_ID"), ("issuer_id", "SIGNET_APPSTORE_ISSUER_ID"),
        ("private_key", "SIGNET_APPSTORE_PRIVATE_KEY"), ("bundle_id", "SIGNET_BUNDLE_ID"),
        ("environment", "SIGNET_ENVIRONMENT"), ("api_url", "SIGNET_APPSTORE_API_URL"),
    ]

    /// The values as written (or the spec's defaults), by variable name.
    var values: [String: String] = [:]
    var checkpoint: String
    var requestsPerSecond: Int?

    init(_ config: ParsedConfig) throws(ConfigError) {
        for (key, variable) in Self.variables { values[variable] = try config.string(key) }
        checkpoint = try config.string("checkpoint")
        requestsPerSecond = try config.optionalInt("requests_per_second")
    }

    /// The client's configuration, with the defaults' variables expanded from `env`.
    func configuration(_ env: [String: String]) throws -> AppStoreAPIConfiguration {
        var resolved: [String: String] = [:]
        // In the spec's order, so the first missing variable named is always the same one.
        for (_, variable) in Self.variables { resolved[variable] = try self.resolved(values[variable] ?? "", env) }
        var configuration = try AppStoreAPIConfiguration.fromEnvironment(resolved)
        if let requestsPerSecond { configuration.requestsPerSecond = Double(requestsPerSecond) }
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

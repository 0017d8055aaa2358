public import AppStoreModels
import Foundation

/// Everything an ``AppStoreServerAPIClient`` needs: credentials, which Apple host, and how
/// hard to push (rate, timeouts, retries).
public struct AppStoreAPIConfiguration: Sendable {
    /// Apple's Production host.
    public static let productionURL = "https://api.storekit.apple.com"
    /// Apple's Sandbox host.
    public static let sandboxURL = "https://api.storekit-sandbox.apple.com"

    public var credentials: AppStoreAPICredentials
    /// `.production` or `.sandbox`: which store is asked, and which limits apply.
    public let environment: AppStoreEnvironment
    /// Where requests for ``environment`` go (Apple's host unless overridden: proxies, tests).
    public var baseURL: String
    /// Where a Production bare-id lookup falls back to on 4040010 (Apple's Sandbox host
    /// unless overridden).
    public var sandboxFallbackURL: String
    /// Requests per second for Apple's 50/s endpoint class (history, statuses, transaction
    /// info and history). Default 40 (Production) or 4 (Sandbox): below Apple's per-app
    /// limits, which are per second but enforced hourly, and Sandbox gets 10%.
    public var requestsPerSecond: Double
    /// Requests per second for the test-notification endpoints (Apple: 1/s, Sandbox 10%).
    public var testNotificationRequestsPerSecond: Double
    /// Per request, from connect to the last byte of the answer.
    public var requestTimeout: Duration = .seconds(30)
    public var connectTimeout: Duration = .seconds(10)
    /// Attempts after the first, per call, for retryable errors (5xx, 4040002/4/6, transport)
    /// and 429s together; then the call throws the last error.
    public var maxRetries: Int = 6
    /// First backoff; doubled per retry up to ``maxBackoff``, each with full jitter.
    public var initialBackoff: Duration = .milliseconds(500)
    public var maxBackoff: Duration = .seconds(30)
    /// A `Retry-After` further ahead than this is treated as this (a broken or absurd header
    /// must not park the client for days).
    public var maxRetryAfter: Duration = .seconds(15 * 60)
    /// How long a bare-id lookup waits before asking Production a second time (new
    /// transaction ids take a moment to appear).
    public var notFoundRetryDelay: Duration = .seconds(2)

    /// - Throws: when `environment` is neither Production nor Sandbox (the only two stores
    ///   with a server API), or a URL does not parse.
    public init(
        credentials: AppStoreAPICredentials, environment: AppStoreEnvironment = .sandbox, baseURL: String? = nil,
        sandboxFallbackURL: String? = nil, requestsPerSecond: Double? = nil, testNotificationRequestsPerSecond: Double? = nil
    ) throws(AppStoreAPIConfigurationError) {
        guard environment == .production || environment == .sandbox else {
            throw AppStoreAPIConfigurationError(
                "the App Store Server API has Production and Sandbox only, not \(environment.rawValue)")
        }
        let production = environment == .production
        self.credentials = credentials
        self.environment = environment
        self.baseURL = try Self.checkedURL(baseURL ?? (production ? Self.productionURL : Self.sandboxURL), "base URL")
        self.sandboxFallbackURL = try Self.checkedURL(sandboxFallbackURL ?? Self.sandboxURL, "Sandbox fallback URL")
        let scale = production ? 1.0 : 0.1
        self.requestsPerSecond = requestsPerSecond ?? 40 * scale
        self.testNotificationRequestsPerSecond = testNotificationRequestsPerSecond ?? 1 * scale
        guard self.requestsPerSecond > 0, self.testNotificationRequestsPerSecond > 0 else {
            throw AppStoreAPIConfigurationError("App Store Server API requests per second must be greater than 0")
        }
    }

    /// Apple's lookback for Get Notification History: 180 days in Production, 30 in Sandbox.
    public var notificationHistoryLookback: Duration {
        .seconds((environment == .production ? 180 : 30) * 86_400)
    }

    /// Reads the settings Signet's commands use:
    ///
    /// | variable | meaning |
    /// |---|---|
    /// | `SIGNET_APPSTORE_KEY_ID` | the key id (required) |
    /// | `SIGNET_APPSTORE_ISSUER_ID` | the issuer id (required) |
    /// | `SIGNET_APPSTORE_PRIVATE_KEY` | path to the `.p8` file (required) |
    /// | `SIGNET_BUNDLE_ID` | the app's bundle id (required) |
    /// | `SIGNET_ENVIRONMENT` | `Sandbox` (default) or `Production`; with both (`Production,Sandbox`), Production |
    /// | `SIGNET_APPSTORE_API_URL` | base URL override (proxies, tests) |
    ///
    /// Throws an error naming the first missing or invalid variable.
    public static func fromEnvironment(_ env: [String: String]) throws(AppStoreAPIConfigurationError) -> AppStoreAPIConfiguration {
        func required(_ name: String) throws(AppStoreAPIConfigurationError) -> String {
            guard let value = env[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                throw AppStoreAPIConfigurationError("\(name) is not set (needed for the App Store Server API)")
            }
            return value
        }
        let keyId = try required("SIGNET_APPSTORE_KEY_ID")
        let issuerId = try required("SIGNET_APPSTORE_ISSUER_ID")
        let keyPath = try required("SIGNET_APPSTORE_PRIVATE_KEY")
        let bundleId = try required("SIGNET_BUNDLE_ID")
        // A pipeline taking both environments (`Production,Sandbox`) asks Apple about
        // Production, where what is missed costs money; Sandbox is one `SIGNET_ENVIRONMENT=Sandbox` away.
        let listed = (env["SIGNET_ENVIRONMENT"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard listed.allSatisfy({ ["", "Sandbox", "Production"].contains($0) }) else {
            throw AppStoreAPIConfigurationError(
                "SIGNET_ENVIRONMENT must be Sandbox or Production (or both, comma-separated), not \"\(env["SIGNET_ENVIRONMENT"] ?? "")\"")
        }
        let environment: AppStoreEnvironment = listed.contains("Production") ? .production : .sandbox
        let credentials: AppStoreAPICredentials
        do {
            credentials = try AppStoreAPICredentials(keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKeyFile: keyPath)
        } catch {
            throw AppStoreAPIConfigurationError("SIGNET_APPSTORE_PRIVATE_KEY: \(error.message)")
        }
        let override = env["SIGNET_APPSTORE_API_URL"].flatMap { $0.isEmpty ? nil : $0 }
        do {
            return try AppStoreAPIConfiguration(credentials: credentials, environment: environment, baseURL: override)
        } catch {
            throw AppStoreAPIConfigurationError("SIGNET_APPSTORE_API_URL: \(error.message)")
        }
    }

    private static func checkedURL(_ text: String, _ what: String) throws(AppStoreAPIConfigurationError) -> String {
        guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw AppStoreAPIConfigurationError("the App Store Server API \(what) \"\(text)\" is not an http(s) URL")
        }
        // Paths are appended to it: no trailing slash, so "/inApps/..." never doubles one.
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}

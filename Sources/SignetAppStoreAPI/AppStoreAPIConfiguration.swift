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
    /// info and history) in ``environment``. Default 40 (Production) or 4 (Sandbox): below
    /// Apple's per-app limits, which are per second but enforced hourly, and Sandbox gets 10%.
    /// Never more than Apple's limit: the client spends at most that whatever is set here.
    /// Send Consumption Information (also 50/s) spends this rate from a bucket of its own.
    public var requestsPerSecond: Double
    /// Requests per second for the test-notification endpoints (Apple: 1/s, Sandbox 10%).
    public var testNotificationRequestsPerSecond: Double
    /// Whether rates are held to Apple's documented limits. Only tests against a local fake
    /// of Apple's API turn it off, to run at the speed of their fake.
    package var enforcesAppleLimits = true
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
    /// must not park the client for days). Apple enforces its limits hourly, so a pause of up
    /// to an hour is honoured in full.
    public var maxRetryAfter: Duration = .seconds(2 * 3600)
    /// How long a bare-id lookup waits before asking Production a second time (new
    /// transaction ids take a moment to appear).
    public var notFoundRetryDelay: Duration = .seconds(2)

    /// - Throws: when `environment` is neither Production nor Sandbox (the only two stores
    ///   with a server API), a URL does not parse or is plain `http` to another machine, or
    ///   a rate is not above 0 or exceeds Apple's limit for the environment.
    public init(
        credentials: AppStoreAPICredentials, environment: AppStoreEnvironment = .sandbox, baseURL: String? = nil,
        sandboxFallbackURL: String? = nil, requestsPerSecond: Double? = nil, testNotificationRequestsPerSecond: Double? = nil
    ) throws(AppStoreAPIConfigurationError) {
        try self.init(
            credentials: credentials, environment: environment, baseURL: baseURL, sandboxFallbackURL: sandboxFallbackURL,
            requestsPerSecond: requestsPerSecond, testNotificationRequestsPerSecond: testNotificationRequestsPerSecond,
            enforcingAppleLimits: true)
    }

    /// The public initializer, with Apple's limits optional: for tests against a local fake.
    package init(
        credentials: AppStoreAPICredentials, environment: AppStoreEnvironment, baseURL: String?, sandboxFallbackURL: String?,
        requestsPerSecond: Double?, testNotificationRequestsPerSecond: Double?, enforcingAppleLimits: Bool
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
        self.requestsPerSecond = requestsPerSecond ?? AppStoreAPIEndpointClass.standard.defaultRate(in: environment)
        self.testNotificationRequestsPerSecond = testNotificationRequestsPerSecond
            ?? AppStoreAPIEndpointClass.testNotification.defaultRate(in: environment)
        self.enforcesAppleLimits = enforcingAppleLimits
        for endpointClass in AppStoreAPIEndpointClass.allCases {
            if let problem = rateProblem(endpointClass) { throw AppStoreAPIConfigurationError(problem) }
        }
    }

    /// Why the rate set for `endpointClass` cannot be used, nil when it can.
    package func rateProblem(_ endpointClass: AppStoreAPIEndpointClass) -> String? {
        let rate = configuredRate(endpointClass)
        let name = endpointClass == .testNotification ? "test-notification requests per second" : "requests per second"
        guard rate > 0, rate.isFinite else { return "App Store Server API \(name) must be greater than 0" }
        let limit = endpointClass.appleLimit(in: environment)
        guard !enforcesAppleLimits || rate <= limit else {
            return "App Store Server API \(name) is \(Self.format(rate)), above Apple's limit of \(Self.format(limit)) per second per app in \(environment.rawValue) (identifying-rate-limits: 50/s Production, 10% of it in Sandbox, 1/s for test notifications)"
        }
        return nil
    }

    /// The rate the client spends from the bucket of `endpointClass` in `environment`: the
    /// configured one in ``environment``; in the other store (a Production client's Sandbox
    /// fallback) that store's default, never the configured store's rate. Held to Apple's
    /// limit even when a caller set the property above it after the checks of the initializer.
    func rate(for endpointClass: AppStoreAPIEndpointClass, in environment: AppStoreEnvironment) -> Double {
        let rate = environment == self.environment ? configuredRate(endpointClass) : endpointClass.defaultRate(in: environment)
        return enforcesAppleLimits ? min(rate, endpointClass.appleLimit(in: environment)) : rate
    }

    /// The property that sets `endpointClass`'s rate in ``environment``.
    private func configuredRate(_ endpointClass: AppStoreAPIEndpointClass) -> Double {
        switch endpointClass {
        case .standard, .consumption: requestsPerSecond
        case .testNotification: testNotificationRequestsPerSecond
        // Hand-run configuration and support calls: Apple's whole limit, no setting of their
        // own; a test against a local fake runs them at its own rate.
        case .retentionMessaging, .retentionDefaultMessage, .orderLookup, .refundHistory, .renewalExtension, .appAccountToken,
            .massExtension:
            enforcesAppleLimits ? endpointClass.defaultRate(in: environment) : requestsPerSecond
        }
    }

    /// Where requests for `environment` go: ``baseURL`` for the configured store,
    /// ``sandboxFallbackURL`` for a Production client's Sandbox fallback.
    func url(for environment: AppStoreEnvironment) -> String {
        environment == self.environment ? baseURL : sandboxFallbackURL
    }

    private static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }

    /// Apple's lookback for Get Notification History: 180 days in Production, 30 in Sandbox.
    public var notificationHistoryLookback: Duration {
        .milliseconds(NotificationHistoryLookback(environment: environment).milliseconds)
    }

    /// The settings Signet's commands and pipeline components give a client, by what they are.
    public enum Setting: String, Sendable, CaseIterable {
        case keyId = "key_id", issuerId = "issuer_id", privateKey = "private_key", bundleId = "bundle_id"
        case environment, apiURL = "api_url"

        /// The variable the commands read it from.
        public var variable: String {
            switch self {
            case .keyId: "SIGNET_APPSTORE_KEY_ID"
            case .issuerId: "SIGNET_APPSTORE_ISSUER_ID"
            case .privateKey: "SIGNET_APPSTORE_PRIVATE_KEY"
            case .bundleId: "SIGNET_BUNDLE_ID"
            case .environment: "SIGNET_ENVIRONMENT"
            case .apiURL: "SIGNET_APPSTORE_API_URL"
            }
        }
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
        try from({ env[$0.variable] }, naming: \.variable)
    }

    /// A configuration from each setting's `value` (nil or blank: not given), checked and
    /// explained the same way wherever the values come from; errors name the first missing
    /// or invalid setting as `name` gives it (a variable, a pipeline key).
    public static func from(
        _ value: (Setting) -> String?, naming name: (Setting) -> String
    ) throws(AppStoreAPIConfigurationError) -> AppStoreAPIConfiguration {
        func required(_ setting: Setting) throws(AppStoreAPIConfigurationError) -> String {
            guard let text = value(setting)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
                throw AppStoreAPIConfigurationError("\(name(setting)) is not set (needed for the App Store Server API)")
            }
            return text
        }
        let keyId = try required(.keyId)
        let issuerId = try required(.issuerId)
        let keyPath = try required(.privateKey)
        let bundleId = try required(.bundleId)
        // A pipeline taking both environments (`Production,Sandbox`) asks Apple about
        // Production, where what is missed costs money; Sandbox is one `Sandbox` away.
        let written = value(.environment) ?? ""
        let listed = written.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard listed.allSatisfy({ ["", "Sandbox", "Production"].contains($0) }) else {
            throw AppStoreAPIConfigurationError(
                "\(name(.environment)) must be Sandbox or Production (or both, comma-separated), not \"\(written)\"")
        }
        let environment: AppStoreEnvironment = listed.contains("Production") ? .production : .sandbox
        let credentials: AppStoreAPICredentials
        do {
            credentials = try AppStoreAPICredentials(keyId: keyId, issuerId: issuerId, bundleId: bundleId, privateKeyFile: keyPath)
        } catch {
            throw AppStoreAPIConfigurationError("\(name(.privateKey)): \(error.message)")
        }
        let override = value(.apiURL).flatMap { $0.isEmpty ? nil : $0 }
        do {
            return try AppStoreAPIConfiguration(credentials: credentials, environment: environment, baseURL: override)
        } catch {
            throw AppStoreAPIConfigurationError("\(name(.apiURL)): \(error.message)")
        }
    }

    private static func checkedURL(_ text: String, _ what: String) throws(AppStoreAPIConfigurationError) -> String {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty
        else {
            throw AppStoreAPIConfigurationError("the App Store Server API \(what) \"\(text)\" is not an http(s) URL")
        }
        // Every request carries a bearer token: in clear only to this machine (a local proxy or fake).
        guard scheme == "https" || isLoopback(host) else {
            throw AppStoreAPIConfigurationError(
                "the App Store Server API \(what) \"\(text)\" is plain http to another machine: the bearer token would cross the network in clear; use https (plain http is allowed to loopback addresses only)")
        }
        // Paths are appended to it: no trailing slash, so "/inApps/..." never doubles one.
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// A loopback address literal or `localhost`: what plain http may reach.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

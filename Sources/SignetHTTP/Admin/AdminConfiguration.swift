public import SignetCore

/// The top-level `http:` section of a pipeline file: one listener for `/metrics`,
/// `/healthz`, `/readyz` and the entitlement API.
public struct AdminConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// The bearer token the `/v1/...` API requires (`SIGNET_API_TOKEN`); required off loopback.
    public var apiToken: String?
    /// The store (by its `stores:` name) the API reads; nil serves no API.
    public var store: String?
    /// Open connections at most; more wait in the listen backlog. The listener's own
    /// budget, so scrapers and scanners cannot use up the descriptors the webhook needs.
    public var maxConnections: Int
    /// How long a connection may stay silent (headers not complete, or idle between requests).
    public var idleTimeout: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 9464, apiToken: String? = nil, store: String? = "default",
        maxConnections: Int = 64, idleTimeout: Duration = .seconds(30)
    ) {
        self.host = host
        self.port = port
        self.apiToken = apiToken
        self.store = store
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
    }

    /// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost), where the API
    /// may answer without a token because only this machine can reach it.
    public var isLoopback: Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in UInt8(part) != nil }
    }

    /// Refuses a listener that would expose user data to the network without a token.
    public func validate() throws(AdminServerError) {
        if store != nil, !isLoopback, (apiToken ?? "").isEmpty {
            throw AdminServerError.tokenRequired(address: "\(host):\(port)")
        }
    }

    /// Splits `host:port` (`[::1]:9464` for IPv6).
    public static func parseAddress(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port), !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}

extension ComponentSpec {
    /// The top-level `http:` section.
    package static let httpSection = ComponentSpec(
        name: "http", summary: "serves /metrics, /healthz, /readyz and the entitlement API on one listener",
        description: """
            Off loopback, the /v1 API needs a bearer token (api_token, or SIGNET_API_TOKEN); \
            Signet refuses to start such a listener without one. See docs/operations.md.
            """,
        fields: AdminConfiguration.configuration.fields,
        examples: [
            """
            http:
              address: 127.0.0.1:9464
            """
        ])
}

extension AdminConfiguration {
    /// The configuration a pipeline's `http:` section says, or nil when it has none;
    /// `environment` supplies `SIGNET_API_TOKEN` when the section names no token.
    public init?(pipeline: Pipeline, environment: [String: String]) throws(ConfigError) {
        guard let section = pipeline.sections[ComponentSpec.httpSection.name] else { return nil }
        self = try Self.configuration.options(section)
        if apiToken == nil { apiToken = environment["SIGNET_API_TOKEN"] }
    }

    /// Every key of the `http:` section, its default the configuration's own
    /// (``AdminConfiguration/init(host:port:apiToken:store:maxConnections:idleTimeout:)``).
    package static let configuration = ConfigBindings<AdminConfiguration>(defaults: AdminConfiguration(), [
        ConfigBinding(
            "address", \.hostAndPort, .string, "host:port to listen on", example: "127.0.0.1:9464",
            written: { $0.host.contains(":") ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)" },
            read: { address, _, config throws(ConfigError) in
                guard let hostAndPort = Self.parseAddress(address) else {
                    throw config.error("'address' must be host:port (e.g. 127.0.0.1:9464), not '\(address)'", key: "address")
                }
                return hostAndPort
            }),
        ConfigBinding(
            "api_token", \.apiToken, .string,
            "bearer token for /v1/... (default: $SIGNET_API_TOKEN); required off loopback",
            example: "${SIGNET_API_TOKEN}"),
        // api and store both set `store` (nil: no API): api decides whether, store which.
        ConfigBinding(
            "api", \.store, .bool, "serve the /v1 entitlement API",
            written: { $0 != nil }, read: { api, options, _ in api ? options.store ?? "" : nil }),
        ConfigBinding(
            "store", \.store, .string, "the store the /v1 API reads",
            written: { $0 }, read: { name, options, _ in options.store == nil ? nil : name }),
        ConfigBinding(
            "max_connections", \.maxConnections, .int(1...65_536),
            "open connections at most (at the limit the longest-idle keep-alive one is closed for the next client; "
                + "with none idle, more wait in the backlog): its own budget, apart from the webhook's",
            advanced: true),
        ConfigBinding(
            "idle_timeout", \.idleTimeout, .duration(.milliseconds(100)...(.seconds(3600))),
            "a connection silent this long (headers not complete, or idle between requests) is closed", advanced: true),
    ])

    /// `host` and `port` together, as `address` sets them.
    private var hostAndPort: (host: String, port: Int) {
        get { (host, port) }
        set { (host, port) = newValue }
    }
}

/// Why the admin listener cannot start.
public enum AdminServerError: Error, Equatable, CustomStringConvertible {
    case tokenRequired(address: String)
    case storeMissing(String)
    /// No In-App Purchase key was given to sign offers with (``AdminServer/init(configuration:pipeline:health:registry:offerSigner:console:logger:)``).
    case noOfferKey

    public var description: String {
        switch self {
        case .tokenRequired(let address):
            "http: refusing to serve the entitlement API on \(address), which is not a loopback address, without a token: set SIGNET_API_TOKEN (or http.api_token), bind 127.0.0.1, or set http.api: false"
        case .storeMissing(let name):
            "http: the entitlement API reads store '\(name)', which the pipeline does not declare as a state store"
        case .noOfferKey:
            "no In-App Purchase key was configured (SIGNET_APPSTORE_KEY_ID, SIGNET_APPSTORE_ISSUER_ID, SIGNET_APPSTORE_PRIVATE_KEY, SIGNET_BUNDLE_ID)"
        }
    }
}

public import SignetCore

/// The top-level `console:` section: the support console on the operators' listener (the
/// `http:` section's), off unless the section is written (docs/console.md).
public struct ConsoleConfiguration: Sendable, Equatable {
    /// When the session cookie carries `Secure`.
    public enum SecureCookie: String, Sendable, CaseIterable {
        /// When the request came through TLS: `X-Forwarded-Proto: https` from the proxy in front.
        case auto
        case always
        case never
    }

    /// The path the console is served under.
    public static let path = "/console"

    /// The state store (its `stores:` name) customers are read from and actions recorded in.
    public var store: String
    /// The file of named, hashed credentials (``ConsoleCredentials``); nil: the `http:`
    /// section's API token signs in as `api-token`, an operator.
    public var credentialsFile: String?
    /// How long a session lasts after sign-in, however active.
    public var sessionLifetime: Duration
    /// How long a session may stay unused.
    public var idleTimeout: Duration
    public var secureCookie: SecureCookie

    public init(
        store: String = "default", credentialsFile: String? = nil, sessionLifetime: Duration = .seconds(8 * 3600),
        idleTimeout: Duration = .seconds(30 * 60), secureCookie: SecureCookie = .auto
    ) {
        self.store = store
        self.credentialsFile = credentialsFile
        self.sessionLifetime = sessionLifetime
        self.idleTimeout = idleTimeout
        self.secureCookie = secureCookie
    }

    /// The configuration a pipeline's `console:` section says, or nil when it has none.
    public init?(pipeline: Pipeline) throws(ConfigError) {
        guard let section = pipeline.sections[ComponentSpec.consoleSection.name] else { return nil }
        try self.init(section)
    }

    init(_ section: ParsedConfig) throws(ConfigError) {
        self.init(
            store: try section.string("store"), credentialsFile: try section.optionalString("credentials"),
            sessionLifetime: try section.duration("session_lifetime"), idleTimeout: try section.duration("idle_timeout"),
            secureCookie: SecureCookie(rawValue: try section.string("secure_cookie")) ?? .auto)
        if sessionLifetime < idleTimeout {
            throw section.error("'console.session_lifetime' must be at least idle_timeout", key: "session_lifetime")
        }
    }

    /// The pipeline-wide check `signet lint` and `signet run` share: the console needs the
    /// operators' listener, a state store, and a credentials file that reads (each error at its line).
    package static func check(_ pipeline: Pipeline) throws {
        guard let section = pipeline.sections[ComponentSpec.consoleSection.name] else { return }
        let configuration = try ConsoleConfiguration(section)
        guard pipeline.sections["http"] != nil else {
            throw section.error("'console' is served on the operators' listener: the pipeline needs an 'http:' section")
        }
        guard pipeline.resources.contains(where: { $0.name == configuration.store }) else {
            throw section.error("'console.store' names '\(configuration.store)', which is not a store under stores:", key: "store")
        }
        if let file = configuration.credentialsFile {
            do {
                _ = try ConsoleCredentials(contentsOf: file)
            } catch {
                throw section.error("'console.credentials' (\(file)): \(error)", key: "credentials")
            }
        }
    }
}

extension ComponentSpec {
    /// The top-level `console:` section.
    public static let consoleSection = ComponentSpec(
        name: "console",
        summary: "serves the support console (customers, their timeline and why, actions through Apple) on the operators' listener",
        description: """
            Off unless written. Pages under /console on the http: section's listener: sign in with a named credential \
            (read_only or operator) from `credentials`, a file of SHA-256 hashed tokens (`signet console credential` \
            makes one); without it the http: API token signs in as the operator `api-token`. Actions go to Apple with \
            the In-App Purchase key's variables (`signet help backfill`) and are kept in the store's audit log. \
            docs/console.md.
            """,
        fields: [
            ConfigField("store", .string, .default("default"), "the state store customers are read from and actions recorded in"),
            ConfigField(
                "credentials", .string, .optional,
                "file of `name role sha256:HEX` lines (role read_only or operator); default: the http: API token, as an operator",
                example: "/etc/signet/console-credentials"),
            ConfigField(
                "session_lifetime", .duration(.seconds(60)...(.seconds(7 * 86_400))), .default("8h"),
                "a session ends this long after sign-in, however active"),
            ConfigField(
                "idle_timeout", .duration(.seconds(60)...(.seconds(7 * 86_400))), .default("30m"), "a session unused this long ends"),
            ConfigField(
                "secure_cookie", .enumeration(ConsoleConfiguration.SecureCookie.allCases.map(\.rawValue)), .default("auto"),
                "when the session cookie is Secure: auto (behind a TLS proxy that sends X-Forwarded-Proto: https), always, never",
                advanced: true),
        ],
        examples: [
            """
            console:
              credentials: /etc/signet/console-credentials
            """
        ])
}

public import SignetCore
import SignetState

/// Settings of ``PostgresStateStore`` (`store: postgres` in YAML).
public struct PostgresStoreOptions: Sendable, Hashable {
    public var url: PostgresURL
    /// Connections the store's calls share, each used by one call at a time; a separate
    /// one renews the lease. One serialises everything; two let delivery marks and the
    /// entitlement API's lookups run while a batch's transaction is open.
    public var poolSize: Int = 2
    /// The server aborts a statement running longer (`SET statement_timeout`).
    public var statementTimeout: Duration = .seconds(30)
    /// How long this instance's claim on its undelivered outbox rows outlives its last
    /// renewal; renewed every third of it. Another instance redelivers them only after that.
    public var lease: Duration = .seconds(30)
    /// How long delivered outbox rows are kept; zero deletes them on acknowledgement.
    public var outboxRetention: Duration = .zero
    /// Queries only: no migrations, no lease (the CLI's `state show`, `entitlements`).
    public var readOnly = false
    /// How long a call keeps retrying while PostgreSQL is unreachable before it fails
    /// (the pipeline pauses meanwhile).
    public var outageTimeout: Duration = .seconds(600)
    /// How long connecting may take before the attempt fails (the batch is retried).
    public var connectTimeout: Duration = .seconds(10)

    public init(url: PostgresURL) {
        self.url = url
    }

    /// Reads a `postgres` (or `auto`) store's settings; a malformed url is a configuration error.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        let url: PostgresURL
        do {
            url = try PostgresURL(try config.string("url"))
        } catch let error as PostgresStoreError {
            throw config.error(error.message, key: "url")
        } catch let error as ConfigError {
            throw error
        } catch {
            throw config.error("\(error)", key: "url")
        }
        self.init(url: url)
        try Self.configuration.apply(config, to: &self)
    }

    /// The YAML keys of a postgres store (`url` required or defaulted, as `auto` needs).
    static func fields(urlRequirement: ConfigField.Requirement) -> [ConfigField] {
        [
            ConfigField(
                "url", .string, urlRequirement,
                "postgres://user:password@host:5432/database?sslmode=disable|prefer|require|verify-ca|verify-full (the password is never logged)",
                example: "${SIGNET_DATABASE_URL}")
        ] + configuration.fields
    }

    /// The keys that set an option besides `url` (whose requirement differs between `postgres`
    /// and `auto`, so it is declared apart), their defaults the options' own.
    package static let configuration = ConfigBindings<PostgresStoreOptions>(defaults: PostgresStoreOptions(url: PostgresURL.localDefault), [
        ConfigBinding(
            "pool_size", \.poolSize, .int(1...64),
            "connections for batches, delivery marks and lookups, one call each at a time (one more renews the lease)", advanced: true),
        ConfigBinding(
            "statement_timeout", \.statementTimeout, .duration(.milliseconds(1)...(.seconds(3600))),
            "the server aborts a statement running longer", advanced: true),
        ConfigBinding(
            "lease", \.lease, .duration(.seconds(1)...(.seconds(3600))),
            "how long another instance waits before redelivering this one's undelivered events after it is gone", advanced: true),
        ConfigBinding(
            "outage_timeout", \.outageTimeout, .duration(.zero...(.seconds(86400))),
            "how long the pipeline pauses (retrying with backoff) while PostgreSQL is unreachable, at start or mid-run, before it fails",
            advanced: true),
        .outboxRetention(\.outboxRetention),
    ])
}

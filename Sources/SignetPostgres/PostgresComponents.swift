public import SignetCore
import SignetState

extension ComponentSpec {
    /// `stores: { NAME: { type: postgres } }`.
    package static let postgresStore = ComponentSpec(
        name: "postgres",
        summary: "state in PostgreSQL, shared by several instances (a Kafka consumer group on several machines)",
        description: "Subscriptions, dedupe keys and the outbox in one PostgreSQL database; migrations run at start "
            + "(under an advisory lock); the view signet_entitlements is the app backend's read interface (docs/postgres.md).",
        fields: PostgresStoreOptions.fields(urlRequirement: .required) + [.entitlementNames],
        examples: ["stores:\n  default:\n    type: postgres\n    url: ${SIGNET_DATABASE_URL:postgres://signet@127.0.0.1:5432/signet?sslmode=disable}"],
        testSubstitute: "memory")

    /// `stores: { NAME: { type: auto } }`: what the shipped pipelines use, so that setting
    /// SIGNET_DATABASE_URL switches them to PostgreSQL with no file to edit.
    package static let autoStore = ComponentSpec(
        name: "auto",
        summary: "postgres when url is set (not empty), else sqlite at path",
        description: "The shipped pipelines' store: `url: ${SIGNET_DATABASE_URL:}` and `path: ...signet.sqlite`.",
        fields: PostgresStoreOptions.fields(urlRequirement: .default("")) + [
            ConfigField(
                "path", .string, .default(StateStoreConfiguration.defaultDatabasePath),
                "the SQLite file used when url is empty", example: "${SIGNET_DATA_DIR:signet-data}/signet.sqlite"),
            .entitlementNames,
        ],
        examples: [
            "stores:\n  default:\n    type: auto\n    url: ${SIGNET_DATABASE_URL:}\n    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite",
        ],
        testSubstitute: "memory")
}

/// Registers the stores `postgres` and `auto` (`ComponentSpec/postgresStore`, `ComponentSpec/autoStore`).
extension ComponentRegistry {
    public mutating func registerPostgresComponents() {
        registerStore(.postgresStore) { config, _ in
            Self.postgresResource(try PostgresStoreOptions(config), entitlementNames: try EntitlementNames(config))
        }
        registerStore(.autoStore) { config, _ in
            guard try !config.string("url").isEmpty else {
                var options = SQLiteStateStore.Options()
                options.outboxRetention = try config.duration("outbox_retention")
                return StateStoreResource(.sqlite(path: try config.string("path"), options: options), entitlementNames: try EntitlementNames(config))
            }
            return Self.postgresResource(try PostgresStoreOptions(config), entitlementNames: try EntitlementNames(config))
        }
    }

    private static func postgresResource(_ options: PostgresStoreOptions, entitlementNames: EntitlementNames?) -> StateStoreResource {
        // The identity names the database, never the password.
        StateStoreResource(identity: "postgres:" + options.url.redacted, entitlementNames: entitlementNames) {
            // Opening blocks (connects, migrates, and waits out a server not up yet for up to
            // outage_timeout): on a thread of its own, not Swift's cooperative pool.
            try await withTaskExecutorPreference(BlockingExecutor(label: "signet.postgres.open")) {
                try PostgresStateStore(options: options)
            }
        }
    }
}

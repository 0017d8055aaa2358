public import SignetCore

extension ConfigField {
    /// `outbox_retention` of every store type: it is also how long a purchase's history lasts.
    public static func outboxRetention(default value: Duration) -> ConfigField {
        ConfigField(
            "outbox_retention", .duration(nil), .default(ConfigDuration.format(value)),
            "how long delivered events stay in the outbox: a purchase's history (`signet state history`, "
                + "/v1/subscriptions/{id}/events) keeps them that long; 0s deletes them on acknowledgement",
            example: "90d")
    }
}

extension ComponentSpec {
    /// `stores: { NAME: { type: sqlite } }`.
    package static let sqliteStore = ComponentSpec(
        name: "sqlite",
        summary: "state in one SQLite file (WAL): subscriptions, dedupe keys, the event outbox",
        description: "The zero-setup default: the implicit store `default` is an sqlite store at the default path.",
        fields: [
            ConfigField(
                "path", .string, .default(StateStoreConfiguration.defaultDatabasePath),
                "the database file (what signet state and signet entitlements read by default)", example: "${SIGNET_DATA_DIR:signet-data}/signet.sqlite"),
            ConfigField(
                "durability", .enumeration(SQLiteStateStore.Durability.allCases.map(\.rawValue)),
                .default(SQLiteStateStore.Options().durability.rawValue),
                "full: fsync per committed batch (survives power loss); normal: fsync at WAL checkpoints (survives a process crash); off", advanced: true),
            ConfigField(
                "busy_timeout", .duration(.zero...(.seconds(3600))), .default(ConfigDuration.format(SQLiteStateStore.Options().busyTimeout)),
                "how long SQLite waits for another connection's lock", advanced: true),
            ConfigField(
                "cache_size", .int(0...100_000_000), .default(String(SQLiteStateStore.Options().cacheCapacity)),
                "snapshots kept in memory (bounded; 0 disables): saves re-reading purchases that receive many notifications within minutes", advanced: true),
            .outboxRetention(default: SQLiteStateStore.Options().outboxRetention),
            .entitlementNames,
        ],
        examples: ["stores:\n  default:\n    type: sqlite\n    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite"],
        testSubstitute: "memory")

    /// `stores: { NAME: { type: memory } }`.
    package static let memoryStore = ComponentSpec(
        name: "memory",
        summary: "state in this process's memory, gone when it exits (tests, signet test)",
        fields: [
            ConfigField("max_keys", .int(1...1_000_000_000), .default("1000000"), "most dedupe keys held; the oldest go first"),
            .outboxRetention(default: .zero),
            .entitlementNames,
        ],
        examples: ["stores:\n  default:\n    type: memory"])
}

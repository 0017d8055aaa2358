import SignetCore

extension ComponentSpec {
    /// `stores: { NAME: { type: sqlite } }`.
    public static let sqliteStore = ComponentSpec(
        name: "sqlite",
        summary: "state in one SQLite file (WAL): subscriptions, dedupe keys, the event outbox",
        description: "The zero-setup default: the implicit store `default` is an sqlite store at the default path.",
        fields: [
            ConfigField(
                "path", .string, .default(StateStoreConfiguration.defaultDatabasePath),
                "the database file (created with its folder if missing)", example: "${SIGNET_DATA_DIR:signet-data}/signet.sqlite"),
            ConfigField(
                "durability", .enumeration(SQLiteStateStore.Durability.allCases.map(\.rawValue)),
                .default(SQLiteStateStore.Options().durability.rawValue),
                "full: fsync every commit; normal: a power loss may lose the last commits; off: tests only", advanced: true),
            ConfigField(
                "busy_timeout", .duration(.zero...(.seconds(3600))), .default(ConfigDuration.format(SQLiteStateStore.Options().busyTimeout)),
                "how long a write waits for another process's lock", advanced: true),
            ConfigField(
                "cache_size", .int(0...100_000_000), .default(String(SQLiteStateStore.Options().cacheCapacity)),
                "subscription snapshots kept in memory", advanced: true),
            ConfigField(
                "outbox_retention", .duration(nil), .default(ConfigDuration.format(SQLiteStateStore.Options().outboxRetention)),
                "how long delivered events stay in the outbox (0s: deleted when pruned)", advanced: true),
        ],
        examples: ["stores:\n  default:\n    type: sqlite\n    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite"],
        testSubstitute: "memory")

    /// `stores: { NAME: { type: memory } }`.
    public static let memoryStore = ComponentSpec(
        name: "memory",
        summary: "state in this process's memory, gone when it exits (tests, signet test)",
        fields: [
            ConfigField("max_keys", .int(1...1_000_000_000), .default("1000000"), "dedupe keys kept before the oldest are dropped"),
            ConfigField("outbox_retention", .duration(nil), .default("0s"), "how long delivered events stay in the outbox", advanced: true),
        ],
        examples: ["stores:\n  default:\n    type: memory"])
}

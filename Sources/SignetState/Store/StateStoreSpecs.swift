public import SignetCore

extension ConfigBinding {
    /// `outbox_retention` of every store type, bound to its options' retention: it is also
    /// how long a purchase's history lasts.
    public static func outboxRetention(_ keyPath: any WritableKeyPath<Options, Duration> & Sendable) -> ConfigBinding {
        ConfigBinding(
            "outbox_retention", keyPath, .duration(nil),
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
        ] + SQLiteStateStore.Options.configuration.fields + [
            .entitlementNames,
        ],
        examples: ["stores:\n  default:\n    type: sqlite\n    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite"],
        testSubstitute: "memory")

    /// `stores: { NAME: { type: memory } }`.
    package static let memoryStore = ComponentSpec(
        name: "memory",
        summary: "state in this process's memory, gone when it exits (tests, signet test)",
        fields: InMemoryStateStore.Options.configuration.fields + [.entitlementNames],
        examples: ["stores:\n  default:\n    type: memory"])
}

extension InMemoryStateStore.Options {
    /// The memory store's keys that set an option, their defaults `Options()`'s.
    package static let configuration = ConfigBindings(defaults: InMemoryStateStore.Options(), [
        ConfigBinding("max_keys", \.maxKeys, .int(1...1_000_000_000), "most dedupe keys held; the oldest go first"),
        .outboxRetention(\.outboxRetention),
    ])
}

extension SQLiteStateStore.Options {
    /// The sqlite store's keys that set an option, their defaults `Options()`'s (path and
    /// entitlement names are the resource's, read apart).
    package static let configuration = ConfigBindings<SQLiteStateStore.Options>(defaults: SQLiteStateStore.Options(), [
        ConfigBinding(
            "durability", \.durability, .enumeration(SQLiteStateStore.Durability.allCases.map(\.rawValue)),
            "full: fsync per committed batch (survives power loss); normal: fsync at WAL checkpoints (survives a process crash); off",
            advanced: true),
        ConfigBinding(
            "busy_timeout", \.busyTimeout, .duration(.zero...(.seconds(3600))), "how long SQLite waits for another connection's lock",
            advanced: true),
        ConfigBinding(
            "cache_size", \.cacheCapacity, .int(0...100_000_000),
            "snapshots kept in memory (bounded; 0 disables): saves re-reading purchases that receive many notifications within minutes",
            advanced: true),
        .outboxRetention(\.outboxRetention),
    ])
}

extension SQLiteStateStore.Durability: ConfigBindable {}

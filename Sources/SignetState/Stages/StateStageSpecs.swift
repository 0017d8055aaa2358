package import SignetCore

extension StageTrait {
    /// The stage checks every dedupe key in its store's commit (`transition`), so a `dedupe`
    /// on the same store need not look them up first (``DedupeStage/Options/keysCheckedByTransition``).
    static let checksDedupeKeys = StageTrait("checks_dedupe_keys")
}

extension ComponentSpec {
    /// Where the store settings of a stage went when stores became named resources.
    static let movedStoreKeys: [String: String] = Dictionary(
        uniqueKeysWithValues: ["database", "durability", "busy_timeout", "cache_size", "outbox_retention", "max_keys", "name"].map {
            ($0, "store settings moved to the top-level 'stores:' (e.g. stores: { default: { type: sqlite, path: ... } }); "
                + "a stage names its store with 'store: NAME'")
        })

    static let storeField = ConfigField(
        "store", .storeName, .default("default"),
        "the entry of the top-level stores: to use (default: the implicit sqlite store at signet-data/signet.sqlite)")

    /// `- type: dedupe`.
    package static let dedupeStage = ComponentSpec(
        name: "dedupe",
        summary: "drops Apple's retries (key: notificationUUID by default; durable store)",
        description: "With transition after it on the same store, it drops repeats within a batch and leaves the store check to transition's commit; alone, it records keys after the sinks acknowledged.",
        fields: DedupeStage.Options.configuration.fields + [storeField],
        requiresBefore: ["verify"],
        retiredKeys: movedStoreKeys)

    /// `- type: transition`.
    package static let transitionStage = ComponentSpec(
        name: "transition",
        summary: "per-purchase state machine; entitlement events through a transactional outbox",
        description: "docs/state-machine.md describes the states, events and policy.",
        fields: TransitionStage.Options.configuration.fields
            + [ConfigField("policy", .object(TransitionPolicy.configuration.fields), .optional, "the choices businesses make differently")]
            + TransitionStage.Options.expiryConfiguration.fields + [
                ConfigField(
                    "non_renewing_durations", .map(.duration(.seconds(1)...(.seconds(3650 * 86_400)))), .optional,
                    "length of a non-renewing subscription without expiresDate, by product id or prefix* (without one, no end is known)"),
                storeField,
            ],
        examples: [
            "stages:\n  - type: transition\n    policy:\n      billing_retry_entitled: true",
            "stages:\n  - type: transition\n    expiry_sweep: 60s\n    non_renewing_durations:\n      com.example.pass.month: 30d\n      com.example.pass.year*: 365d",
        ],
        requiresBefore: ["verify"],
        // Every record leaves with its events as outputs, or dropped or rejected without any;
        // its commit checks every dedupe key.
        traits: [.replacesOutputs, .checksDedupeKeys],
        retiredKeys: movedStoreKeys,
        rejects: [.missingTransaction, .environmentConflict, .unknownNotificationType])

    /// `- type: fanout`.
    package static let fanoutStage = ComponentSpec(
        name: "fanout",
        summary: "routes entitlement events to sinks by event type, environment and product",
        description: "Every route whose `when` matches sends the event to its sinks; an event no route matches goes to default_sinks.",
        fields: [
            ConfigField(
                "routes", .objectList([
                    ConfigField("sinks", .stringList(allowed: nil), .required, "the sinks (names under sinks:) matching events go to"),
                    ConfigField("when", .object([
                        ConfigField(
                            "type", .stringList(allowed: EntitlementEventType.allCases.map(\.rawValue)), .optional,
                            "event types (any when absent)"),
                        ConfigField("environment", .stringList(allowed: nil), .optional, "Production, Sandbox, ... (any when absent)"),
                        ConfigField("product", .stringList(allowed: nil), .optional, "product ids; a trailing * matches a prefix"),
                    ]), .optional, "conditions, all of which must hold"),
                ]), .optional, "routing rules, each checked for every event"),
            ConfigField("default_sinks", .stringList(allowed: nil), .optional, "where events no route matched go (none: dropped)"),
        ],
        examples: [
            "stages:\n  - type: fanout\n    routes:\n      - sinks: [refunds]\n        when: { type: [refunded, revoked] }\n    default_sinks: [events]",
        ],
        requiresBefore: ["transition"])
}

extension ConfigBinding {
    /// `key` of `dedupe` and `transition`, bound to the option that names what identifies a retry.
    static func dedupeKey(_ keyPath: any WritableKeyPath<Options, DedupeKeyKind> & Sendable) -> ConfigBinding {
        ConfigBinding(
            "key", keyPath, .enumeration(DedupeKeyKind.allCases.map(\.rawValue)),
            "what identifies a retry: notificationUUID, or content (type, subtype, signedDate, transaction)")
    }
}

extension DedupeStage.Options {
    /// `dedupe`'s keys that set an option, their defaults `Options()`'s (store names a resource).
    package static let configuration = ConfigBindings<DedupeStage.Options>(defaults: DedupeStage.Options(), [
        .dedupeKey(\.key),
        ConfigBinding(
            "retention", \.retention, .duration(.seconds(1)...(.seconds(3650 * 86_400))),
            "how long keys are kept (Apple retries a notification for about 6.5 days: 1, 12, 24, 48 and 72 hours after the previous attempt)"),
    ])
}

extension TransitionStage.Options {
    /// `transition`'s keys before `policy`, their defaults `Options()`'s.
    package static let configuration = ConfigBindings<TransitionStage.Options>(defaults: TransitionStage.Options(), [
        .dedupeKey(\.dedupeKey),
        ConfigBinding("retention", \.retention, .duration(.seconds(1)...(.seconds(3650 * 86_400))), "how long dedupe keys are kept"),
    ])

    /// `transition`'s keys after `policy` (the spec keeps its order, so they are a list apart).
    package static let expiryConfiguration = ConfigBindings<TransitionStage.Options>(defaults: TransitionStage.Options(), [
        ConfigBinding(
            "expiry_sweep", \.expirySweep, .duration(.zero...(.seconds(86_400))),
            "how often to look for access that ended by time alone (a lost EXPIRED, a lapsed grace period, a non-renewing subscription); 0s turns it off"),
        ConfigBinding(
            "expiry_leeway", \.expiryLeeway, .duration(.zero...(.seconds(7 * 86_400))),
            "how long past an end point the sweep waits before it says access ended, so a renewal Apple reports a little late does not flap"),
    ])
}

extension TransitionPolicy {
    /// The keys of `transition`'s `policy:`, their defaults `TransitionPolicy()`'s
    /// (non_renewing_durations, a map, is a key of the stage and read apart).
    package static let configuration = ConfigBindings<TransitionPolicy>(defaults: TransitionPolicy(), [
        ConfigBinding(
            "billing_retry_entitled", \.billingRetryEntitled, .bool, "a subscription in billing retry without grace period keeps access"),
        ConfigBinding("grace_period_entitled", \.gracePeriodEntitled, .bool, "a subscription in the billing grace period keeps access"),
        ConfigBinding(
            "family_shared_entitled", \.familySharedEntitled, .bool, "purchases shared through Family Sharing entitle the family member"),
        ConfigBinding(
            "entitle_on_app_transaction", \.entitleOnAppTransaction, .bool,
            "a signed transaction the app forwards grants access before Apple's notification arrives"),
        ConfigBinding(
            "reject_unknown_types", \.rejectUnknownTypes, .bool,
            "unknown notification types are dead-lettered instead of emitted as unknown_notification events"),
    ])
}

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

    static let dedupeKeyField = ConfigField(
        "key", .enumeration(DedupeKeyKind.allCases.map(\.rawValue)), .default(DedupeKeyKind.notificationUUID.rawValue),
        "what identifies a retry: notificationUUID, or content (type, subtype, signedDate, transaction)")

    /// `- type: dedupe`.
    package static let dedupeStage = ComponentSpec(
        name: "dedupe",
        summary: "drops Apple's retries (key: notificationUUID by default; durable store)",
        description: "With transition after it on the same store, it drops repeats within a batch and leaves the store check to transition's commit; alone, it records keys after the sinks acknowledged.",
        fields: [
            dedupeKeyField,
            ConfigField(
                "retention", .duration(.seconds(1)...(.seconds(3650 * 86_400))), .default(ConfigDuration.format(DedupeStage.Options().retention)),
                "how long keys are kept (Apple retries a notification for about 6.5 days: 1, 12, 24, 48 and 72 hours after the previous attempt)"),
            storeField,
        ],
        requiresBefore: ["verify"],
        retiredKeys: movedStoreKeys)

    /// `- type: transition`.
    package static let transitionStage = ComponentSpec(
        name: "transition",
        summary: "per-purchase state machine; entitlement events through a transactional outbox",
        description: "docs/state-machine.md describes the states, events and policy.",
        fields: [
            dedupeKeyField,
            ConfigField(
                "retention", .duration(.seconds(1)...(.seconds(3650 * 86_400))),
                .default(ConfigDuration.format(TransitionStage.Options().retention)),
                "how long dedupe keys are kept"),
            ConfigField("policy", .object(transitionPolicyFields), .optional, "the choices businesses make differently"),
            ConfigField(
                "expiry_sweep", .duration(.zero...(.seconds(86_400))),
                .default(ConfigDuration.format(TransitionStage.Options().expirySweep)),
                "how often to look for access that ended by time alone (a lost EXPIRED, a lapsed grace period, a non-renewing subscription); 0s turns it off"),
            ConfigField(
                "expiry_leeway", .duration(.zero...(.seconds(7 * 86_400))),
                .default(ConfigDuration.format(TransitionStage.Options().expiryLeeway)),
                "how long past an end point the sweep waits before it says access ended, so a renewal Apple reports a little late does not flap"),
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
        retiredKeys: movedStoreKeys)

    static let transitionPolicyFields: [ConfigField] = {
        let policy = TransitionPolicy()
        return [
            ConfigField(
                "billing_retry_entitled", .bool, .default(String(policy.billingRetryEntitled)),
                "a subscription in billing retry without grace period keeps access"),
            ConfigField(
                "grace_period_entitled", .bool, .default(String(policy.gracePeriodEntitled)),
                "a subscription in the billing grace period keeps access"),
            ConfigField(
                "family_shared_entitled", .bool, .default(String(policy.familySharedEntitled)),
                "purchases shared through Family Sharing entitle the family member"),
            ConfigField(
                "entitle_on_app_transaction", .bool, .default(String(policy.entitleOnAppTransaction)),
                "a signed transaction the app forwards grants access before Apple's notification arrives"),
            ConfigField(
                "reject_unknown_types", .bool, .default(String(policy.rejectUnknownTypes)),
                "unknown notification types are dead-lettered instead of emitted as unknown_notification events"),
        ]
    }()

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

package import SignetCore
import SignetAppStoreAPI

extension ComponentSpec {
    /// `stages: [{type: appstore_consumption}, ...]`.
    package static let appStoreConsumptionStage = ComponentSpec(
        name: "appstore_consumption",
        summary: "answers Apple's refund questions (CONSUMPTION_REQUEST) for customers who consented, by policy, within the deadline (service mode)",
        description: """
            Put it after `transition`: a new request then wakes it at once; else every `interval` it takes the refund \
            questions `transition` stored and answers each with Send Consumption \
            Information: only with the customer's consent (the ledger: `POST /v1/consumption/consent`, `signet consumption \
            consent`), never past the 12-hour deadline, never twice. The delivery status comes from Signet's state of the \
            purchase, the consumption of a non-renewing subscription from its elapsed term, the refund preference from the \
            customer's ledger entry, else the product's, the entitlement's, the reason's, else `refund_preference`. \
            Records pass through untouched. docs/consumption.md.
            """,
        fields: AppStoreConsumptionStage.Options.configuration.fields + [
            ConfigField(
                "refund_preference_by_reason", .map(.enumeration(refundPreferences)), .optional,
                "per consumptionRequestReason (UNINTENDED_PURCHASE, FULFILLMENT_ISSUE, UNSATISFIED_WITH_PURCHASE, LEGAL, OTHER)",
                example: "UNINTENDED_PURCHASE: GRANT_FULL"),
            ConfigField(
                "refund_preference_by_product", .map(.enumeration(refundPreferences)), .optional,
                "per product id; wins over the entitlement and the reason", example: "com.example.coins.100: DECLINE"),
            ConfigField(
                "refund_preference_by_entitlement", .map(.enumeration(refundPreferences)), .optional,
                "per entitlement name (`entitlements:`); wins over the reason", example: "pro: DECLINE"),
            ConfigField(
                "sample_content_provided_by_product", .map(.bool), .optional,
                "per product id, whether a sample, trial or preview was offered; wins over the entitlement and sample_content_provided (what the backend records per purchase, POST /v1/consumption/usage, wins over all)",
                example: "com.example.coins.100: false"),
            ConfigField(
                "sample_content_provided_by_entitlement", .map(.bool), .optional,
                "per entitlement name (`entitlements:`); wins over sample_content_provided", example: "pro: true"),
            ConfigField("store", .storeName, .default("default"), "the store whose refund questions it answers (`stores:`)"),
        ] + AppStoreAPISettings.fields,
        examples: [
            "stages:\n  - type: transition\n  - type: appstore_consumption\n    refund_preference: DECLINE\n    refund_preference_by_reason:\n      FULFILLMENT_ISSUE: GRANT_FULL"
        ])

    /// The values a refund preference key takes: Apple's, and NONE (send no preference).
    static let refundPreferences = ["NONE"] + ConsumptionInformation.RefundPreference.allCases.map(\.rawValue)
}

extension ConsumptionPolicy.ConsentSource: ConfigBindable {}

extension AppStoreConsumptionStage.Options {
    /// The stage's keys that set an option, their defaults `Options()`'s (the maps, the store
    /// and the API settings are read apart).
    package static let configuration = ConfigBindings<AppStoreConsumptionStage.Options>(defaults: AppStoreConsumptionStage.Options(), [
        ConfigBinding(
            "interval", \.interval, .duration(.zero...(.seconds(3600))),
            "time between sweeps (a new request wakes the stage at once when it sits after transition); 0s: requests are kept, none is answered"),
        ConfigBinding(
            "consent", \.responder.policy.consent, .enumeration(ConsumptionPolicy.ConsentSource.allCases.map(\.rawValue)),
            "whose questions are answered: `ledger` (customers with a consenting entry), or `all_customers_agreed_in_app_terms` (everyone but those who withdrew: only if the app's terms obtain every customer's consent)"),
        ConfigBinding(
            "refund_preference", \.responder.policy.refundPreference, .enumeration(ComponentSpec.refundPreferences),
            "the refund preference sent when nothing more specific applies (NONE: none)",
            written: { $0?.rawValue ?? "NONE" },
            read: { (raw: String, _, _) in ConsumptionInformation.RefundPreference(rawValue: raw) }),
        ConfigBinding(
            "sample_content_provided", \.responder.policy.sampleContentProvided, .bool,
            "whether the app gives a free sample, a trial or information about the content before a purchase"),
        ConfigBinding("batch_limit", \.responder.batchLimit, .int(1...1000), "most requests one sweep claims", advanced: true),
        ConfigBinding(
            "claim", \.responder.claim, .duration(.seconds(10)...(.seconds(3600))),
            "how long a request being answered is held before another sweep, instance or restart may take it", advanced: true),
        ConfigBinding(
            "retry_delay", \.responder.retryDelay, .duration(.seconds(1)...(.seconds(3600))),
            "the first wait before a failed answer is tried again (doubled per attempt, never past the deadline)", advanced: true),
    ])
}

package import SignetCore

extension ComponentSpec {
    /// `stages: [{type: appstore_reconcile}, ...]`.
    package static let appStoreReconcileStage = ComponentSpec(
        name: "appstore_reconcile",
        summary: "asks Apple every interval about subscriptions whose period ended with no renewal and no expiry notice, and applies its answer (service mode)",
        description: """
            Put it first in `stages:`. Every `interval` it asks its store for the auto-renewable subscriptions whose \
            period ended in the last `window` (at least `leeway` ago) while Signet expected a renewal (auto-renew on, no \
            expiration intent, not in billing retry, not revoked), fetches Get All Subscription Statuses for each and feeds \
            the statuses into the later stages as `signet reconcile` does: a renewal Signet never heard of becomes its \
            event, a lapse is confirmed, a state that agrees stays silent. Each stale period is asked about once per run. \
            docs/appstore-api.md.
            """,
        fields: AppStoreReconcileStage.Options.configuration.fields + [
            ConfigField("store", .storeName, .default("default"), "the store whose subscriptions it checks (`stores:`)"),
        ] + AppStoreAPISettings.fields,
        examples: [
            "stages:\n  - type: appstore_reconcile\n    interval: 6h\n    window: 3d"
        ])
}

extension AppStoreReconcileStage.Options {
    /// The stage's keys that set an option, their defaults `Options()`'s (store names a
    /// resource and the API settings are read apart).
    package static let configuration = ConfigBindings<AppStoreReconcileStage.Options>(defaults: AppStoreReconcileStage.Options(), [
        ConfigBinding(
            "interval", \.interval, .duration(.zero...(.seconds(7 * 86_400))),
            "time between sweeps; 0s turns the stage off (no API calls, no credentials needed)"),
        ConfigBinding(
            "window", \.window, .duration(.seconds(60)...(.seconds(180 * 86_400))),
            "how long ago a period may have ended and still be asked about"),
        ConfigBinding(
            "leeway", \.leeway, .duration(.zero...(.seconds(7 * 86_400))),
            "how long after a period's end Apple's own renewal notification is waited for first", advanced: true),
        ConfigBinding(
            "limit", \.limit, .int(1...1_000_000),
            "most subscriptions one sweep asks about (a larger backlog goes on at the next sweep)", advanced: true),
    ])
}

package import SignetCore

extension ComponentSpec {
    /// `stages: [{type: appstore_catch_up}, ...]`.
    package static let appStoreCatchUpStage = ComponentSpec(
        name: "appstore_catch_up",
        summary: "asks Apple every interval for the notifications it could not deliver, and processes them (service mode)",
        description: """
            Put it first in `stages:`. Every `interval` it pages through Get Notification History (onlyFailures) for the \
            recent window and feeds each notification into the later stages as the webhook would have received it: \
            verified like any input, and dropped by dedupe when Apple's own retry got through. The first sweep of a run \
            looks back `window`; each later one starts `overlap` before the previous successful one. Fetching runs beside \
            the pipeline, within the process-wide rate limit, and never holds up other input. Nothing is checkpointed: a \
            restart sweeps `window` again. Figures on /metrics (signet_catch_up_*); docs/appstore-api.md.
            """,
        fields: AppStoreCatchUpStage.Options.configuration.fields + AppStoreAPISettings.fields,
        examples: [
            "stages:\n  - type: appstore_catch_up\n    interval: 15m\n    window: 8d"
        ])
}

extension AppStoreCatchUpStage.Options {
    /// The stage's own keys, their defaults `Options()`'s (the API settings are read apart).
    package static let configuration = ConfigBindings<AppStoreCatchUpStage.Options>(defaults: AppStoreCatchUpStage.Options(), [
        ConfigBinding(
            "interval", \.interval, .duration(.zero...(.seconds(7 * 86_400))),
            "time between sweeps; 0s turns the stage off (no API calls, no credentials needed)"),
        ConfigBinding(
            "window", \.window, .duration(.seconds(60)...(.seconds(180 * 86_400))),
            "how far back the first sweep of a run looks (Apple stops retrying after about 6.5 days; older than Apple keeps is clamped)"),
        ConfigBinding(
            "overlap", \.overlap, .duration(.zero...(.seconds(7 * 86_400))),
            "how far before the previous successful sweep's start the next one begins (failures Apple records late)",
            advanced: true),
        ConfigBinding(
            "only_failures", \.onlyFailures, .bool,
            "only notifications Apple never delivered successfully; false reads every notification of the window (dedupe drops the known ones)",
            advanced: true),
    ])
}

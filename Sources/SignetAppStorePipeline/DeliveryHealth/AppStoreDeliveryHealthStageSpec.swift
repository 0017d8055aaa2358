package import SignetCore

extension ComponentSpec {
    /// `stages: [{type: appstore_delivery_health}, ...]`.
    package static let appStoreDeliveryHealthStage = ComponentSpec(
        name: "appstore_delivery_health",
        summary: "asks Apple for a TEST notification every interval and checks it comes back through the webhook in time (service mode)",
        description: """
            Put it after `verify`. Every `interval` it calls Request a Test Notification and watches for the TEST \
            notification to pass through the pipeline (or, with several instances behind one URL, for its dedupe key in the \
            shared `store`) within `timeout`, polling Get Test Notification Status for Apple's send attempts. Each round \
            trip's result goes to /metrics (signet_delivery_round_trips_total, \
            signet_delivery_round_trip_last_success_timestamp_seconds, signet_delivery_round_trip_seconds, \
            signet_apple_send_attempts_total) and to `state_file` (`signet appstore health` prints it); a failure is logged \
            once at error with what Apple said. Records pass through untouched. docs/operations.md.
            """,
        fields: AppStoreDeliveryHealthStage.Options.configuration.fields + [
            ConfigField(
                "store", .storeName, .optional,
                "a shared store whose dedupe keys show a TEST notification another instance took (`stores:`); absent: only this instance's"),
        ] + AppStoreAPISettings.fields,
        examples: ["stages:\n  - type: verify\n  - type: appstore_delivery_health\n    interval: 1h\n    timeout: 2m"])
}

extension AppStoreDeliveryHealthStage.Options {
    /// The stage's keys that set an option, their defaults `Options()`'s.
    package static let configuration = ConfigBindings<AppStoreDeliveryHealthStage.Options>(
        defaults: AppStoreDeliveryHealthStage.Options(), [
            ConfigBinding(
                "interval", \.interval, .duration(.zero...(.seconds(7 * 86_400))),
                "time between round trips (Apple allows one request a second); 0s turns the stage off"),
            ConfigBinding(
                "timeout", \.timeout, .duration(.seconds(10)...(.seconds(3600))),
                "how long the TEST notification may take to come back before the round trip fails"),
            ConfigBinding("poll", \.poll, .duration(.seconds(1)...(.seconds(300))), "how often Apple's status is asked meanwhile", advanced: true),
            ConfigBinding("state_file", \.stateFile, .string, "where the last round trips are kept for `signet appstore health`"),
        ])
}

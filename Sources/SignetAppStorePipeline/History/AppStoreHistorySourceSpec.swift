package import SignetCore

extension ComponentSpec {
    /// `source: {type: appstore_history}`.
    package static let appStoreHistorySource = ComponentSpec(
        name: "appstore_history",
        summary: "notifications Apple sent in a window, read back from Get Notification History (backfill)",
        description: """
            Each history item becomes the record the webhook would have received ({"signedPayload": ...}), so decode, \
            verify, dedupe and transition treat it like any notification, and what was processed before is dropped. \
            The window is split into sub-windows fetched concurrently within the client's rate limit; a page is recorded \
            in the checkpoint once all its records are committed, and a restart resumes there. `signet backfill` runs a \
            pipeline with this source (docs/appstore-api.md).
            """,
        fields: [
            ConfigField(
                "start", .string, .required,
                "where the window starts: a duration before now (72h, 30d), an ISO-8601 date or date-time, or UNIX ms; older than Apple keeps (180 days Production, 30 Sandbox) is clamped with a warning",
                example: "72h"),
        ] + AppStoreHistorySource.Options.configuration.fields + [
            ConfigField(
                "checkpoint", .string, .default("${SIGNET_DATA_DIR:signet-data}/backfill.json"),
                "where committed pages are kept (replaced atomically); an unfinished backfill there is resumed, a finished one replaced"),
        ] + AppStoreAPISettings.fields,
        examples: [
            "source:\n  type: appstore_history\n  start: 72h\n  only_failures: true\n  checkpoint: ${SIGNET_DATA_DIR:signet-data}/backfill.json"
        ])
}

extension AppStoreHistorySource.Options {
    /// The source's keys that set an option, their defaults the options' own; start (required)
    /// and checkpoint (a path with variables, expanded when the source opens) are read apart.
    package static let configuration = ConfigBindings<AppStoreHistorySource.Options>(
        defaults: AppStoreHistorySource.Options(start: "", checkpointPath: ""),
        [
            ConfigBinding(
                "end", \.end, .string, "where the window ends (exclusive), in the same forms; default now",
                example: "2026-11-01T00:00:00Z"),
            ConfigBinding("only_failures", \.onlyFailures, .bool, "only notifications Apple never delivered successfully (onlyFailures)"),
            ConfigBinding(
                "sub_windows", \.subWindows, .int(1...1000), "parts the window is split into (Apple pages one window sequentially)",
                advanced: true),
            ConfigBinding(
                "parallelism", \.parallelism, .int(1...64), "sub-windows fetched at the same time (all within requests_per_second)",
                advanced: true),
        ])
}

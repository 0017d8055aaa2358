extension PipelineSettings {
    /// The `settings:` section.
    package static let spec = ComponentSpec(
        name: "settings",
        summary: "how the runner batches, reports and retries",
        fields: configuration.fields)

    /// Settings from a validated `settings:` section.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        self = try Self.configuration.options(config)
    }

    /// The section's keys, their defaults ``PipelineSettings/init()``'s.
    package static let configuration = ConfigBindings<PipelineSettings>(defaults: PipelineSettings(), [
        ConfigBinding(
            "batch_size", \.batchSize, .int(1...100_000),
            "the most records that travel together: read, committed and (with state) written in one transaction; "
                + "batches queued behind a busy stage or sink merge up to this size, so a backlog moves in full "
                + "batches and a quiet stream record by record"),
        ConfigBinding(
            "progress_interval", \.progressInterval, .duration(nil),
            "a progress line on stderr during long runs (0s: never)",
            // nil (never) is written 0s.
            written: { $0 ?? .zero }, read: { interval, _, _ in interval == .zero ? nil : interval }),
        ConfigBinding(
            "sink_retry_timeout", \.sinkRetryTimeout, .duration(.milliseconds(1)...(.seconds(86_400))),
            "a failing sink is retried with backoff (100 ms doubling to 5 s) this long, then the run stops without committing"),
        ConfigBinding(
            "shutdown_timeout", \.shutdownTimeout, .duration(.milliseconds(1)...(.seconds(86_400))),
            "how long SIGTERM/SIGINT may take to drain (stop intake, deliver and commit what is in flight) "
                + "before the process exits 1 anyway"),
    ])
}

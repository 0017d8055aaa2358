extension PipelineSettings {
    /// The `settings:` section.
    package static let spec = ComponentSpec(
        name: "settings",
        summary: "how the runner batches, reports and retries",
        fields: [
            ConfigField(
                "batch_size", .int(1...100_000), .default("256"),
                "the most records that travel together: read, committed and (with state) written in one transaction; "
                    + "batches queued behind a busy stage or sink merge up to this size, so a backlog moves in full "
                    + "batches and a quiet stream record by record"),
            ConfigField(
                "progress_interval", .duration(nil), .default("10s"),
                "a progress line on stderr during long runs (0s: never)"),
            ConfigField(
                "sink_retry_timeout", .duration(.milliseconds(1)...(.seconds(86_400))), .default("5m"),
                "a failing sink is retried with backoff (100 ms doubling to 5 s) this long, then the run stops without committing"),
            ConfigField(
                "shutdown_timeout", .duration(.milliseconds(1)...(.seconds(86_400))), .default("20s"),
                "how long SIGTERM/SIGINT may take to drain (stop intake, deliver and commit what is in flight) "
                    + "before the process exits 1 anyway"),
        ])

    /// Settings from a validated `settings:` section.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        self.init()
        batchSize = try config.int("batch_size")
        let interval = try config.duration("progress_interval")
        progressInterval = interval == .zero ? nil : interval
        sinkRetryTimeout = try config.duration("sink_retry_timeout")
        shutdownTimeout = try config.duration("shutdown_timeout")
    }
}

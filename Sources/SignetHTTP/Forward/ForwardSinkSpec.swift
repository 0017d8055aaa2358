package import SignetCore
import SignetState

extension ComponentSpec {
    /// `type: forward` (a sink).
    package static let forwardSink = ComponentSpec(
        name: "forward",
        summary: "passes every verified notification, exactly as received, on to other URLs through a durable queue",
        description: """
            Takes no events: every notification verify accepted (whatever later stages did with it; a retry \
            dedupe dropped too, so a crash before the sinks acknowledged never loses one) is queued in the state store once per receiver and acknowledged, so a \
            receiver that is down does not hold the pipeline back. Each receiver is sent its queue in the \
            background, at least once: 2xx is done; 408, 429, 5xx, timeouts and refused connections are retried \
            with backoff; another 4xx (forward_refused) or failing past max_age (forward_expired) writes the body \
            to dead_letter_path. Only a receiver with max_pending bodies queued holds the pipeline (the write \
            fails and the runner retries it). docs/forwarding.md.
            """,
        fields: [
            ConfigField(
                "urls", .stringList(allowed: nil), .required, "the receivers (http:// or https://); each gets every body",
                example: "[\"https://staging.example/apple\"]"),
        ] + ForwardSink.Options.configuration.fields,
        examples: ["sinks:\n  staging:\n    type: forward\n    urls: [http://127.0.0.1:9001/apple, http://127.0.0.1:9002/apple]"])
}

extension ForwardSink.Options {
    /// The options a validated `type: forward` mapping says.
    package init(_ config: ParsedConfig) throws(ConfigError) {
        self = try Self.configuration.options(config)
        let urls = try config.stringList("urls") ?? []
        guard !urls.isEmpty else { throw config.error("'urls' needs at least one receiver", key: "urls") }
        for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw config.error("'\(url)' must start with http:// or https://", key: "urls")
        }
        guard Set(urls).count == urls.count else { throw config.error("a receiver is listed twice", key: "urls") }
        self.urls = urls
    }

    /// The keys of `type: forward` that set an option, their defaults `Options()`'s (`urls`
    /// is required and a list, so it is read apart).
    package static let configuration = ConfigBindings<ForwardSink.Options>(defaults: ForwardSink.Options(), [
        ConfigBinding("store", \.store, .storeName, "the entry of the top-level stores: holding the queue"),
        ConfigBinding("timeout", \.timeout, .duration(.milliseconds(10)...(.seconds(300))), "per request"),
        ConfigBinding(
            "max_age", \.maxAge, .duration(.seconds(1)...(.seconds(90 * 86_400))),
            "how long a body is retried before it is dead-lettered (forward_expired)"),
        ConfigBinding(
            "max_pending", \.maxPending, .int(1...100_000_000),
            "bodies one receiver's queue may hold; beyond, writes fail and the pipeline waits"),
        ConfigBinding(
            "dead_letter_path", \.deadLetterPath, .string,
            "refused and expired bodies, one JSON line each (default: forward-dead-letters.ndjson in $SIGNET_DATA_DIR, else signet-data)"),
        ConfigBinding(
            "initial_backoff", \.initialBackoff, .duration(.milliseconds(1)...(.seconds(600))), "first retry delay; doubles per attempt",
            advanced: true),
        ConfigBinding("max_backoff", \.maxBackoff, .duration(.milliseconds(1)...(.seconds(86_400))), "longest retry delay", advanced: true),
        ConfigBinding(
            "drain_timeout", \.drainTimeout, .duration(.zero...(.seconds(600))),
            "on close, how long to wait for answering receivers to get what is queued (a stdin run ends right after its last write)"),
        ConfigBinding("batch", \.batch, .int(1...1_000), "entries claimed per round", advanced: true),
        ConfigBinding("concurrency", \.concurrency, .int(1...64), "requests in flight per receiver", advanced: true),
        ConfigBinding(
            "poll_interval", \.pollInterval, .duration(.milliseconds(10)...(.seconds(60))),
            "longest wait between looks at the queue (retries due, another instance's entries)", advanced: true),
    ])
}

extension ComponentRegistry {
    /// Registers the `forward` sink.
    package mutating func registerForwardComponents() {
        registerSink(.forwardSink) { config, context in
            let options = try ForwardSink.Options(config)
            let resource = try context.resource(named: options.store, as: StateStoreResource.self)
            return ForwardSink(
                options: options, name: context.name ?? "forward", store: { try resource.roles() },
                deadLetterPath: options.deadLetterPath ?? ForwardSink.defaultDeadLetterPath(environment: context.environment),
                logger: context.logger)
        }
    }
}

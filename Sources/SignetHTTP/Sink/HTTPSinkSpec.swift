public import SignetCore

extension ComponentSpec {
    /// `type: http` (a sink).
    package static let httpSink = ComponentSpec(
        name: "http",
        summary: "POSTs events to a URL, one per request or as a JSON array; acknowledged on 2xx",
        description: """
            408, 429, 5xx and timeouts are retried with backoff; any other 4xx dead-letters the \
            record (http_rejected). With signing_secret, X-Signet-Signature: sha256=<hex HMAC-SHA256 \
            of the body> (docs/operations.md shows the receiver's check).
            """,
        fields: [ConfigField("url", .string, .required, "where to POST (http:// or https://)", example: "https://backend.example/signet-events")]
            + HTTPSink.Options.configuration.fields
            + [ConfigField("headers", .stringMap, .optional, "extra request headers", example: "{ Authorization: \"Bearer ${BACKEND_TOKEN}\" }")],
        examples: ["sinks:\n  backend:\n    type: http\n    url: http://127.0.0.1:8000/events\n    mode: batch"])
}

extension HTTPSink.Options {
    /// The options a validated `type: http` mapping says.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        let url = try config.string("url")
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw config.error("'url' must start with http:// or https://", key: "url")
        }
        self = try Self.configuration.options(config)
        self.url = url
        headers = try config.stringMap("headers").map { ($0.key, $0.value) }
    }

    /// The keys of `type: http` (a sink) that set an option, their defaults the options'
    /// own (`url` is required and `headers` a map, so both are read apart).
    package static let configuration = ConfigBindings<HTTPSink.Options>(defaults: HTTPSink.Options(url: ""), [
        ConfigBinding(
            "mode", \.mode, .enumeration(HTTPSink.Options.Mode.allCases.map(\.rawValue)),
            "single: one event per request; batch: a JSON array per request"),
        ConfigBinding("max_batch", \.maxBatch, .int(1...10_000), "events per request in batch mode"),
        ConfigBinding("timeout", \.timeout, .duration(.milliseconds(10)...(.seconds(300))), "per request"),
        ConfigBinding(
            "max_retries", \.maxRetries, .int(0...1000), "retries per request before the write fails (the runner then retries the batch)"),
        ConfigBinding(
            "initial_backoff", \.initialBackoff, .duration(.milliseconds(1)...(.seconds(60))), "first retry delay; doubles each time",
            advanced: true),
        ConfigBinding(
            "max_backoff", \.maxBackoff, .duration(.milliseconds(1)...(.seconds(600))), "longest retry delay (also caps Retry-After)",
            advanced: true),
        ConfigBinding(
            "signing_secret", \.signingSecret, .string, "shared secret for X-Signet-Signature", example: "${SIGNET_HTTP_SINK_SECRET}",
            written: { secret in secret.map { String(decoding: $0, as: UTF8.self) } },
            read: { text, _, _ in text.map { Array($0.utf8) } }),
    ])
}

extension HTTPSink.Options.Mode: ConfigBindable {}

extension ComponentRegistry {
    /// Registers the `http` sink and the top-level `http:` section.
    public mutating func registerHTTPComponents() {
        registerSink(.httpSink) { config, context in
            HTTPSink(options: try HTTPSink.Options(config), name: context.name ?? "http", logger: context.logger)
        }
        registerSection(.httpSection)
    }
}

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
        fields: [
            ConfigField("url", .string, .required, "where to POST (http:// or https://)", example: "https://backend.example/signet-events"),
            ConfigField("mode", .enumeration(HTTPSink.Options.Mode.allCases.map(\.rawValue)), .default("single"),
                "single: one event per request; batch: a JSON array per request"),
            ConfigField("max_batch", .int(1...10_000), .default("100"), "events per request in batch mode"),
            ConfigField("timeout", .duration(.milliseconds(10)...(.seconds(300))), .default("10s"), "per request"),
            ConfigField("max_retries", .int(0...1000), .default("5"), "retries per request before the write fails (the runner then retries the batch)"),
            ConfigField("initial_backoff", .duration(.milliseconds(1)...(.seconds(60))), .default("200ms"), "first retry delay; doubles each time", advanced: true),
            ConfigField("max_backoff", .duration(.milliseconds(1)...(.seconds(600))), .default("10s"), "longest retry delay (also caps Retry-After)", advanced: true),
            ConfigField("signing_secret", .string, .optional, "shared secret for X-Signet-Signature", example: "${SIGNET_HTTP_SINK_SECRET}"),
            ConfigField("headers", .stringMap, .optional, "extra request headers", example: "{ Authorization: \"Bearer ${BACKEND_TOKEN}\" }"),
        ],
        examples: ["sinks:\n  backend:\n    type: http\n    url: http://127.0.0.1:8000/events\n    mode: batch"])
}

extension HTTPSink.Options {
    /// The options a validated `type: http` mapping says.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        let url = try config.string("url")
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw config.error("'url' must start with http:// or https://", key: "url")
        }
        self.init(url: url)
        mode = Mode(rawValue: try config.string("mode")) ?? .single
        maxBatch = try config.int("max_batch")
        timeout = try config.duration("timeout")
        maxRetries = try config.int("max_retries")
        initialBackoff = try config.duration("initial_backoff")
        maxBackoff = try config.duration("max_backoff")
        signingSecret = try config.optionalString("signing_secret").map { Array($0.utf8) }
        headers = try config.stringMap("headers").map { ($0.key, $0.value) }
    }
}

extension ComponentRegistry {
    /// Registers the `http` sink and the top-level `http:` section.
    public mutating func registerHTTPComponents() {
        registerSink(.httpSink) { config, context in
            HTTPSink(options: try HTTPSink.Options(config), name: context.name ?? "http", logger: context.logger)
        }
        registerSection(.httpSection)
    }
}

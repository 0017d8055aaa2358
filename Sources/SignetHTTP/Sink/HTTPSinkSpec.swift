public import SignetCore
import SignetConsole

extension ComponentSpec {
    /// `type: http` (a sink).
    package static let httpSink = ComponentSpec(
        name: "http",
        summary: "POSTs events to a URL, one per request or as a JSON array; acknowledged on 2xx",
        description: """
            408, 429, 5xx and timeouts are retried with backoff; any other 4xx dead-letters the \
            record (http_rejected). With signing_secret (or signing_secret_file), every request carries \
            Signet-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t." and the body>, a second v1 while \
            previous_signing_secret is set (rotation); docs/operations.md shows the receiver's check and \
            its replay window. tls_certificate and tls_private_key present a client certificate (mutual TLS).
            """,
        fields: [ConfigField("url", .string, .required, "where to POST (http:// or https://)", example: "https://backend.example/signet-events")]
            + HTTPSink.Options.configuration.fields
            + [ConfigField("headers", .stringMap, .optional, "extra request headers", example: "{ Authorization: \"Bearer ${BACKEND_TOKEN}\" }")],
        examples: ["sinks:\n  backend:\n    type: http\n    url: http://127.0.0.1:8000/events\n    mode: batch"],
        rejects: [.httpRejected])
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
        if signingSecret != nil, signingSecretFile != nil {
            throw config.error("give 'signing_secret' or 'signing_secret_file', not both", key: "signing_secret_file")
        }
        if previousSigningSecret != nil, previousSigningSecretFile != nil {
            throw config.error("give 'previous_signing_secret' or 'previous_signing_secret_file', not both", key: "previous_signing_secret_file")
        }
        if (tlsCertificate == nil) != (tlsPrivateKey == nil) {
            throw config.error("'tls_certificate' and 'tls_private_key' go together (mutual TLS)", key: tlsCertificate == nil ? "tls_certificate" : "tls_private_key")
        }
        if (tlsCertificate != nil || tlsCA != nil), !url.hasPrefix("https://") {
            throw config.error("TLS settings need an https:// url", key: tlsCertificate != nil ? "tls_certificate" : "tls_ca")
        }
        if previousSigningSecret != nil || previousSigningSecretFile != nil, signingSecret == nil, signingSecretFile == nil {
            throw config.error("a previous signing secret goes with the current one (signing_secret or signing_secret_file)", key: "signing_secret")
        }
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
            "signing_secret", \.signingSecret, .string, "shared secret for Signet-Signature (and X-Signet-Signature)",
            example: "${SIGNET_HTTP_SINK_SECRET}",
            written: { secret in secret.map { String(decoding: $0, as: UTF8.self) } },
            read: { text, _, _ in text.map { Array($0.utf8) } }),
        ConfigBinding(
            "signing_secret_file", \.signingSecretFile, .string, "a file holding the secret, read when the sink opens (instead of signing_secret)"),
        ConfigBinding(
            "previous_signing_secret", \.previousSigningSecret, .string,
            "while rotating: the old secret, signed with too (a second v1) until every receiver holds the new one",
            written: { secret in secret.map { String(decoding: $0, as: UTF8.self) } },
            read: { text, _, _ in text.map { Array($0.utf8) } }),
        ConfigBinding("previous_signing_secret_file", \.previousSigningSecretFile, .string, "a file holding the old secret", advanced: true),
        ConfigBinding("tls_certificate", \.tlsCertificate, .string, "client certificate (PEM) for mutual TLS with an https:// receiver", advanced: true),
        ConfigBinding("tls_private_key", \.tlsPrivateKey, .string, "the client certificate's private key (PEM)", advanced: true),
        ConfigBinding("tls_ca", \.tlsCA, .string, "CA certificates (PEM) trusted for the receiver instead of the system's", advanced: true),
    ])
}

extension HTTPSink.Options.Mode: ConfigBindable {}

extension ComponentRegistry {
    /// Registers the `http` sink, the top-level `http:` section and the `console:` section served on it.
    public mutating func registerHTTPComponents() {
        registerSink(.httpSink) { config, context in
            HTTPSink(options: try HTTPSink.Options(config), name: context.name ?? "http", logger: context.logger)
        }
        registerSection(.httpSection)
        registerSection(.consoleSection)
        registerPipelineCheck(ConsoleConfiguration.check)
    }
}

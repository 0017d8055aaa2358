import Foundation
public import SignetCore
import SignetState

extension ComponentSpec {
    /// `source: {type: http}`: Apple's webhook.
    package static let httpSource = ComponentSpec(
        name: "http",
        summary: "Apple's webhook: POSTed notifications, each answered 200 only after its record is committed",
        description: """
            Hummingbird HTTP/1.1 server. A request is answered once its record is committed (state written and every \
            sink acknowledged, or dead-lettered with its reason); 503 with Retry-After when the pipeline cannot take it \
            now. Status codes and limits: docs/webhook.md.
            """,
        fields: HTTPSource.Options.configuration.fields + [
            ConfigField(
                "store", .storeName, .optional,
                "the state store the app's call reads entitlements from (default: the pipeline's store 'default')"),
        ],
        examples: ["source:\n  type: http\n  address: 127.0.0.1:8080\n  path: /notifications"])
}

extension ComponentRegistry {
    /// Registers the `http` source (keys: `ComponentSpec/httpSource`).
    public mutating func registerWebhookComponents() {
        // The `retention:` section (SignetAppStorePipeline) is served by this source.
        registerPipelineCheck(HTTPSource.checkRetention)
        registerSource(.httpSource) { config, context in
            var options = try HTTPSource.Options(config)
            var store: StateStoreResource?
            if options.purchasesPath != nil {
                let name = try config.optionalString("store") ?? "default"
                guard context.resources[name] != nil else {
                    throw config.error(
                        "'\(config.path).purchases_path' answers with entitlements from the state store: declare one under stores: (or name it with 'store')",
                        key: "purchases_path")
                }
                store = try context.resource(named: name, as: StateStoreResource.self)
                let token = options.apiToken ?? context.environment["SIGNET_API_TOKEN"]
                options.apiToken = token.flatMap { $0.isEmpty ? nil : $0 }
                if options.apiToken == nil, !options.address.isLoopback {
                    throw config.error(
                        "'\(config.path).purchases_path' on \(options.address) (not loopback) needs a bearer token: set api_token or SIGNET_API_TOKEN",
                        key: "api_token")
                }
            }
            return HTTPSource(options: options, store: store, logger: context.logger)
        }
    }
}

extension HTTPSource.Options {
    /// Options from a validated `source: {type: http}` mapping (``apiToken`` as written,
    /// without the factory's `SIGNET_API_TOKEN` fallback).
    public init(_ config: ParsedConfig) throws(ConfigError) {
        self = try Self.configuration.options(config)
    }

    /// Every key of `source: {type: http}` that sets an option, its default the option's
    /// own (``HTTPSource/Options/init()``).
    package static let configuration = ConfigBindings<HTTPSource.Options>(defaults: HTTPSource.Options(), [
        ConfigBinding(
            "address", \.address, .string,
            "host:port to listen on ([::1]:8080 for IPv6; port 0 picks a free port); put a TLS-terminating proxy in front",
            example: "${SIGNET_HTTP_ADDRESS:127.0.0.1:8080}",
            written: { $0.description },
            read: { text, _, config throws(ConfigError) in
                guard let address = ListenAddress(parsing: text) else {
                    throw config.error(
                        "'\(config.path).address' must be host:port (for example 127.0.0.1:8080), not '\(text)'", key: "address")
                }
                return address
            }),
        ConfigBinding(
            "path", \.path, .string, "the path notifications are POSTed to",
            check: { path, _, config throws(ConfigError) in
                guard path.hasPrefix("/") else { throw config.error("'\(config.path).path' must start with /", key: "path") }
                return path
            }),
        ConfigBinding(
            "max_body_bytes", \.maxBodyBytes, .int(1024...(16 << 20)),
            "larger bodies are refused with 413 (Apple's notifications are about 19 KB)"),
        ConfigBinding(
            "read_timeout", \.readTimeout, .duration(.milliseconds(100)...(.seconds(3600))),
            "a connection that sends no complete header (or idles between requests) this long is closed",
            advanced: true),
        ConfigBinding(
            "body_timeout", \.bodyTimeout, .duration(.milliseconds(100)...(.seconds(3600))),
            "a body not complete this long after its headers closes the connection (slowloris)", advanced: true),
        ConfigBinding(
            "max_connections", \.maxConnections, .int(1...100_000),
            "open connections at most; at the limit the longest-idle keep-alive connection is closed for the next client, "
                + "and only when none is idle do more wait in the listen backlog", advanced: true),
        ConfigBinding(
            "max_in_flight", \.maxInFlight, .int(1...1_000_000),
            "records accepted and not yet committed at most; beyond it requests get 503", advanced: true),
        ConfigBinding(
            "batch_linger", \.batchLinger, .duration(.zero...(.milliseconds(100))),
            "how long a request waits, at most, for others to share its batch (one state commit and one sink flush) "
                + "when fewer than batch_size are queued: a steady trickle then pays one commit per few requests "
                + "instead of one each, for that much added latency (docs/webhook.md)",
            example: "${SIGNET_HTTP_BATCH_LINGER:10ms}"),
        ConfigBinding(
            "response_timeout", \.responseTimeout, .duration(.milliseconds(100)...(.seconds(3600))),
            "a request whose record is not committed this long gets 503 (the record stays in the pipeline; "
                + "the retry is deduplicated)", advanced: true),
        ConfigBinding(
            "retry_after", \.retryAfter, .duration(.seconds(1)...(.seconds(86_400))),
            "the Retry-After of every 503", advanced: true),
        ConfigBinding(
            "retry_misconfigured", \.retryMisconfigured, .bool,
            "answer 503 instead of 200 when a notification is dead-lettered because it is for another app or "
                + "environment than configured (bundle id, environment, app Apple ID), so Apple sends it again (for "
                + "about 6.5 days, Production only) and fixing the setting in time recovers it; each retry is "
                + "dead-lettered again until then (docs/webhook.md)"),
        ConfigBinding(
            "purchases_path", \.purchasesPath, .string,
            "where the app's own call is POSTed ({\"signedTransaction\": ...} right after a purchase): answered after "
                + "commit with the purchase's entitlements, 422 when it does not verify; off when unset or empty (docs/purchases.md)",
            example: "/v1/purchases",
            check: { purchasesPath, options, config throws(ConfigError) in
                // Empty means off, so a pipeline can leave it to a variable (${SIGNET_PURCHASES_PATH:}).
                guard let purchasesPath, !purchasesPath.isEmpty else { return nil }
                guard purchasesPath.hasPrefix("/"), purchasesPath != options.path else {
                    throw config.error("'\(config.path).purchases_path' must start with / and differ from path", key: "purchases_path")
                }
                return purchasesPath
            }),
        ConfigBinding(
            "api_token", \.apiToken, .string,
            "bearer token the app's call must carry (default: $SIGNET_API_TOKEN); required unless the listener is on loopback",
            example: "${SIGNET_API_TOKEN}"),
    ])
}

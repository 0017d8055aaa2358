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
        fields: [
            ConfigField(
                "address", .string, .default("127.0.0.1:8080"),
                "host:port to listen on ([::1]:8080 for IPv6; port 0 picks a free port); put a TLS-terminating proxy in front",
                example: "${SIGNET_HTTP_ADDRESS:127.0.0.1:8080}"),
            ConfigField("path", .string, .default("/notifications"), "the path notifications are POSTed to"),
            ConfigField(
                "max_body_bytes", .int(1024...(16 << 20)), .default("65536"),
                "larger bodies are refused with 413 (Apple's notifications are about 19 KB)"),
            ConfigField(
                "read_timeout", .duration(.milliseconds(100)...(.seconds(3600))), .default("10s"),
                "a connection that sends no complete header (or idles between requests) this long is closed",
                advanced: true),
            ConfigField(
                "body_timeout", .duration(.milliseconds(100)...(.seconds(3600))), .default("10s"),
                "a body not complete this long after its headers closes the connection (slowloris)", advanced: true),
            ConfigField(
                "max_connections", .int(1...100_000), .default("256"),
                "open connections at most; at the limit the longest-idle keep-alive connection is closed for the next client, "
                    + "and only when none is idle do more wait in the listen backlog", advanced: true),
            ConfigField(
                "max_in_flight", .int(1...1_000_000), .default("4096"),
                "records accepted and not yet committed at most; beyond it requests get 503", advanced: true),
            ConfigField(
                "batch_linger", .duration(.zero...(.milliseconds(100))), .default("0s"),
                "how long a request waits, at most, for others to share its batch (one state commit and one sink flush) "
                    + "when fewer than batch_size are queued: a steady trickle then pays one commit per few requests "
                    + "instead of one each, for that much added latency (docs/webhook.md)",
                example: "${SIGNET_HTTP_BATCH_LINGER:5ms}"),
            ConfigField(
                "response_timeout", .duration(.milliseconds(100)...(.seconds(3600))), .default("25s"),
                "a request whose record is not committed this long gets 503 (the record stays in the pipeline; "
                    + "the retry is deduplicated)", advanced: true),
            ConfigField(
                "retry_after", .duration(.seconds(1)...(.seconds(86_400))), .default("5s"),
                "the Retry-After of every 503", advanced: true),
            ConfigField(
                "retry_misconfigured", .bool, .default("false"),
                "answer 503 instead of 200 when a notification is dead-lettered because it is for another app or "
                    + "environment than configured (bundle id, environment, app Apple ID), so Apple sends it again (for "
                    + "about 6.5 days, Production only) and fixing the setting in time recovers it; each retry is "
                    + "dead-lettered again until then (docs/webhook.md)"),
            ConfigField(
                "purchases_path", .string, .optional,
                "where the app's own call is POSTed ({\"signedTransaction\": ...} right after a purchase): answered after "
                    + "commit with the purchase's entitlements, 422 when it does not verify; off when unset or empty (docs/purchases.md)",
                example: "/v1/purchases"),
            ConfigField(
                "api_token", .string, .optional,
                "bearer token the app's call must carry (default: $SIGNET_API_TOKEN); required unless the listener is on loopback",
                example: "${SIGNET_API_TOKEN}"),
            ConfigField(
                "store", .storeName, .optional,
                "the state store the app's call reads entitlements from (default: the pipeline's store 'default')"),
        ],
        examples: ["source:\n  type: http\n  address: 127.0.0.1:8080\n  path: /notifications"])
}

extension ComponentRegistry {
    /// Registers the `http` source (keys: ``ComponentSpec/httpSource``).
    public mutating func registerWebhookComponents() {
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
                let token = try config.optionalString("api_token") ?? context.environment["SIGNET_API_TOKEN"]
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
    /// Options from a validated `source: {type: http}` mapping.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        self.init()
        let addressText = try config.string("address")
        guard let address = ListenAddress(parsing: addressText) else {
            throw config.error("'\(config.path).address' must be host:port (for example 127.0.0.1:8080), not '\(addressText)'", key: "address")
        }
        self.address = address
        path = try config.string("path")
        guard path.hasPrefix("/") else { throw config.error("'\(config.path).path' must start with /", key: "path") }
        maxBodyBytes = try config.int("max_body_bytes")
        readTimeout = try config.duration("read_timeout")
        bodyTimeout = try config.duration("body_timeout")
        maxConnections = try config.int("max_connections")
        maxInFlight = try config.int("max_in_flight")
        batchLinger = try config.duration("batch_linger")
        responseTimeout = try config.duration("response_timeout")
        retryAfter = try config.duration("retry_after")
        retryMisconfigured = try config.bool("retry_misconfigured")
        // Empty means off, so a pipeline can leave it to a variable (${SIGNET_PURCHASES_PATH:}).
        purchasesPath = try config.optionalString("purchases_path").flatMap { $0.isEmpty ? nil : $0 }
        if let purchasesPath {
            guard purchasesPath.hasPrefix("/"), purchasesPath != path else {
                throw config.error("'\(config.path).purchases_path' must start with / and differ from path", key: "purchases_path")
            }
        }
    }
}

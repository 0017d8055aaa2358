// Apple's webhook inside your own service: Signet's pipeline is one service of your
// ServiceGroup, beside yours, and both stop gracefully on SIGTERM or SIGINT.
//
//   WebhookService --bundle-id ID [--environment Sandbox] [--root PEM] --store signet.sqlite [--port 8080]
//
// Point App Store Connect's server notification URL (V2) at http://HOST:PORT/notifications, behind
// your TLS proxy. Each notification is verified, deduplicated and applied to the store before
// Apple gets its 200; the entitlement changes update this service's in-memory view of who has
// access. On SIGTERM the webhook answers 503 (Apple retries later), what it accepted is
// committed, and only then does your service stop.
import Foundation
import Logging
import ServiceLifecycle
import SignetHTTP
import SignetState

/// Prints a line and sends it out at once, also into a pipe or a file (a supervisor's log).
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// Your service's own view of who has access, kept current by the events.
actor AccessCache {
    private var entitled: [String: Bool] = [:]
    func apply(_ event: EntitlementEvent) {
        guard let purchase = event.originalTransactionId else { return }
        entitled[purchase] = event.entitled
        say("access \(purchase) \(event.entitled ? "on" : "off") (\(event.type.rawValue)); \(entitled.values.filter { $0 }.count) with access")
    }
}

/// The sink that feeds it.
struct AccessUpdates: EntitlementEventSink {
    let cache: AccessCache
    func write(events: [EntitlementEvent]) async throws {
        for event in events { await cache.apply(event) }
    }
}

/// Stands for the rest of your service: here it says where the webhook listens, then waits
/// for the group to shut down.
struct AppService: Service {
    let webhook: HTTPSource
    func run() async throws {
        while webhook.boundAddress == nil { try await Task.sleep(for: .milliseconds(20)) }
        say("webhook listening on http://\(webhook.boundAddress!)\(webhook.options.path)")
        try? await gracefulShutdown()
        say("app service stopped")
    }
}

func option(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

guard let bundleId = option("--bundle-id"), let storePath = option("--store") else {
    FileHandle.standardError.write(Data("usage: WebhookService --bundle-id ID [--environment E] [--root PEM] --store DB [--port N]\n".utf8))
    exit(2)
}

do {
    let logger = Logger(label: "example.webhook")
    let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
        roots: try AppleRoots.load([option("--root") ?? "apple"]),
        environment: AppStoreEnvironment(rawValue: option("--environment") ?? "Production"),
        bundleId: bundleId))
    let store = try SQLiteStateStore(path: storePath)
    var webhookOptions = HTTPSource.Options()
    webhookOptions.address = ListenAddress(host: "127.0.0.1", port: Int(option("--port") ?? "") ?? 0)
    let webhook = HTTPSource(options: webhookOptions, logger: logger)
    let pipeline = try Pipeline(
        source: webhook,
        stages: StatePipeline.stages(verifier: verifier, store: store),
        sinks: [NamedSink(name: "access", sink: AccessUpdates(cache: AccessCache()))],
        deadLetter: DeadLetterOutput(sink: FileSink(path: storePath + ".dead-letter.ndjson")))
    // Listed last, the pipeline is shut down first: intake stops and drains before your service stops.
    let group = ServiceGroup(
        services: [AppService(webhook: webhook), PipelineService(runner: PipelineRunner(pipeline: pipeline, logger: logger))],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    do {
        try await group.run()
    } catch {
        try? store.close()
        throw error
    }
    try store.close()
    say("stopped cleanly")
} catch {
    FileHandle.standardError.write(Data("WebhookService: \(error)\n".utf8))
    exit(1)
}

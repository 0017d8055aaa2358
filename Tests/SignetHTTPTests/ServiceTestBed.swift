import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Prometheus
import Signet
import SignetCore
import SignetFixtures
import SignetHTTP
import SignetTestSupport

/// Signed sample notifications, a pipeline file around them, and the pipeline run
/// in-process with its admin listener beside it (on its own Prometheus registry, so
/// parallel tests do not share counters).
struct ServiceTestBed {
    let directory: URL
    let notifications: URL
    let forged: URL
    let rootPath: String
    let notificationCount: Int

    init(count: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-http-\(UUID().uuidString.prefix(8))")
        let summary = try FixtureSet(directory: directory.appendingPathComponent("fixtures")).write(count: count)
        notifications = directory.appendingPathComponent("fixtures/notifications.ndjson")
        forged = directory.appendingPathComponent("fixtures/forged.ndjson")
        rootPath = summary.rootPath
        notificationCount = count
    }

    /// `input` through the full chain; `sink` is the YAML of the `events` sink; `http`
    /// the YAML body of the `http:` section (nil: none).
    /// - Parameter store: more keys of the store (flow YAML: `outbox_retention: 1d, entitlements: {...}`).
    func pipelineYAML(
        input: URL, sink: String, http: String? = "address: 127.0.0.1:0", batchSize: Int = 16, store: String? = nil
    ) -> String {
        var yaml = """
            settings:
              batch_size: \(batchSize)
              sink_retry_timeout: 60s
            stores:
              default: { type: sqlite, path: \(directory.path)/signet.sqlite\(store.map { ", " + $0 } ?? "") }
            source:
              type: file
              path: \(input.path)
            stages:
              - type: decode
              - type: verify
                roots: \(rootPath)
                environment: Sandbox
                bundle_id: com.example.signet
              - type: dedupe
              - type: transition
              - type: fanout
                default_sinks: [events]
            sinks:
              events:
            \(sink.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            dead_letter:
              type: file
              path: \(directory.path)/dead-letter.ndjson
              format: json

            """
        if let http {
            yaml += "http:\n" + http.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n"
        }
        return yaml
    }

    func load(_ yaml: String, environment: [String: String] = [:]) throws -> Pipeline {
        try PipelineLoader(registry: Signet.makeRegistry(), environment: environment).load(yaml: yaml, file: "test.yaml")
    }

    /// The runner on a private registry, and its admin listener (nil without `http:`).
    func service(
        _ pipeline: Pipeline, environment: [String: String] = [:]
    ) throws -> (runner: PipelineRunner, admin: AdminServer?, registry: PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        let runner = PipelineRunner(pipeline: pipeline, metrics: PipelineMetrics(factory: PrometheusMetricsFactory(registry: registry)))
        let admin = try AdminServer.make(for: runner, environment: environment, registry: registry)
        return (runner, admin, registry)
    }

    func lines(_ name: String) throws -> [String] {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// GET with Python's http.client: an independent client. Returns status and body.
/// Runs on a Dispatch thread: waiting for the process on the cooperative pool (two
/// threads on two cores) would starve the server under test.
func pythonGET(host: String = "127.0.0.1", port: Int, path: String, token: String? = nil) async throws -> (status: Int, body: String) {
    try await pythonRequest("GET", host: host, port: port, path: path, token: token)
}

/// A request with `method` (no body) by Python's http.client, as ``pythonGET(host:port:path:token:)``.
func pythonRequest(
    _ method: String, host: String = "127.0.0.1", port: Int, path: String, token: String? = nil
) async throws -> (status: Int, body: String) {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try blockingPythonRequest(method, host: host, port: port, path: path, token: token) })
        }
    }
}

private func blockingPythonRequest(_ method: String, host: String, port: Int, path: String, token: String?) throws -> (status: Int, body: String) {
    let script = """
        import http.client, sys, json
        conn = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=20)
        headers = {"Authorization": "Bearer " + sys.argv[4]} if sys.argv[4] else {}
        conn.request(sys.argv[5], sys.argv[3], headers=headers)
        r = conn.getresponse()
        sys.stdout.write(json.dumps({"status": r.status, "body": r.read().decode()}))
        """
    let result = try Python.run(script, arguments: [host, String(port), path, token ?? "", method])
    guard result.status == 0,
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any],
        let status = object["status"] as? Int, let body = object["body"] as? String
    else { throw TestFailure("python \(method) \(path) failed: \(result.output)") }
    return (status, body)
}

/// Runs `admin` in a ServiceGroup while `body` runs, then shuts it down gracefully.
func withListening<T: Sendable>(_ admin: AdminServer, _ body: @Sendable (Int) async throws -> T) async throws -> T {
    let group = ServiceGroup(configuration: .init(services: [admin], gracefulShutdownSignals: [], logger: Logger(label: "test")))
    let running = Task { try await group.run() }
    guard let port = await admin.boundPort() else { throw CancellationError() }
    do {
        let result = try await body(port)
        await group.triggerGracefulShutdown()
        try await running.value
        return result
    } catch {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        throw error
    }
}

import Foundation
import Signet
import SignetCore
import SignetFixtures
import SignetHTTP
import SignetTestSupport
import Testing

/// A real webhook pipeline in this process: the `http` source on 127.0.0.1 (a free port),
/// the full chain (decode, verify against a fixture root, dedupe, transition, fanout),
/// events to a file sink, rejects to a dead-letter file. Clients are curl and Python.
final class WebhookHarness {
    let directory: TemporaryDirectory
    let notifications: [String]
    let forged: [String]
    let runner: PipelineRunner
    let source: HTTPSource
    let run: Task<RunSummary, any Error>
    let port: Int

    /// `start` runs the pipeline (by default `runner.run()`; a test may run it under a lifecycle).
    init(
        count: Int = 8, sourceKeys: String = "", settings: String = "",
        start: @escaping @Sendable (PipelineRunner) -> Task<RunSummary, any Error> = { runner in Task { try await runner.run() } }
    ) async throws {
        directory = try TemporaryDirectory(prefix: "signet-webhook")
        let fixtures = FixtureSet(directory: directory.url)
        let summary = try fixtures.write(count: count)
        notifications = try Self.lines(directory.path("notifications.ndjson"))
        forged = try Self.lines(directory.path("forged.ndjson"))
        let yaml = """
            stores: { default: { type: sqlite, path: \(directory.path("signet.sqlite")) } }
            source:
              type: http
              address: 127.0.0.1:0
            \(sourceKeys)
            stages:
              - type: decode
              - { type: verify, roots: \(summary.rootPath), environment: Sandbox, bundle_id: com.example.signet }
              - type: dedupe
              - type: transition
              - { type: fanout, default_sinks: [events] }
            sinks:
              events: { type: file, path: \(directory.path("events.ndjson")) }
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            settings: { progress_interval: 0s \(settings) }
            """
        let pipeline = try PipelineLoader(registry: Signet.makeRegistry(), environment: [:]).load(yaml: yaml, file: "webhook-test.yaml")
        source = try #require(pipeline.source as? HTTPSource)
        let runner = PipelineRunner(pipeline: pipeline)
        self.runner = runner
        run = start(runner)
        port = try await Self.boundPort(of: source)
    }

    /// The port `source` listens on, once the running pipeline opened it; gives up after 60 s
    /// (a loaded machine).
    static func boundPort(of source: HTTPSource) async throws -> Int {
        var bound = source.boundAddress
        for _ in 0..<3000 where bound == nil {
            try await Task.sleep(for: .milliseconds(20))
            bound = source.boundAddress
        }
        return try #require(bound?.port)
    }

    var url: String { "http://127.0.0.1:\(port)/notifications" }

    /// Stops the pipeline (drain, commit, close) and returns its summary.
    func finish() async throws -> RunSummary {
        await runner.requestStop()
        defer { directory.remove() }
        return try await run.value
    }

    func eventLines() throws -> [String] { try Self.lines(directory.path("events.ndjson")) }
    func deadLetters() throws -> [String] { try Self.lines(directory.path("dead.ndjson")) }

    static func lines(_ path: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }
}

/// curl, as an independent HTTP client.
enum Curl {
    struct Reply: Sendable {
        var status: Int
        var headers: String
        var body: String
    }

    /// Sends one request off Swift's cooperative pool (whose threads serve the server too).
    static func request(
        _ url: String, method: String = "POST", body: String? = nil, headers: [String] = ["Content-Type: application/json"]
    ) async throws -> Reply {
        try await offPool { try blockingRequest(url, method: method, body: body, headers: headers) }
    }

    /// Sends one request; the body (if any) from a file so large bodies need no shell.
    static func blockingRequest(_ url: String, method: String = "POST", body: String? = nil, headers: [String] = ["Content-Type: application/json"]) throws -> Reply {
        let folder = try TemporaryDirectory(prefix: "signet-curl")
        defer { folder.remove() }
        var arguments = ["-s", "-S", "-X", method, "-D", folder.path("headers"), "-o", folder.path("body"), "-w", "%{http_code}", "--max-time", "30"]
        for header in headers { arguments += ["-H", header] }
        if let body {
            try body.write(toFile: folder.path("request"), atomically: true, encoding: .utf8)
            arguments += ["--data-binary", "@" + folder.path("request")]
        }
        arguments.append(url)
        let result = try SignetProcess.run(executable: ChildProcess.env, ["curl"] + arguments, timeout: 60)
        let output = result.stdout
        let read = { (name: String) in (try? String(contentsOfFile: folder.path(name), encoding: .utf8)) ?? "" }
        return Reply(status: Int(String(decoding: output, as: UTF8.self)) ?? 0, headers: read("headers"), body: read("body"))
    }
}

/// Runs python3 clients off the cooperative pool (``offPool(_:)``), so waiting for a child
/// process never takes one of the few threads the in-process server needs.
enum Blocking {
    static func python(_ script: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offPool { try Python.run(script, arguments: arguments) }
    }
}

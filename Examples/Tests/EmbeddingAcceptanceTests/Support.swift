// Shared helpers of the acceptance tests: fixtures, temporary directories, capturing sinks and
// sources, a pipeline run with everything it produced. Public API only (this is another package).
import Foundation
import Logging
import SignetFixtures
import SignetState
import Synchronization
import Testing

/// Signed test data made once per test process with `SignetFixtures.FixtureSet` (what
/// `signet fixtures --now` writes), kept in memory; the folder it was written to is removed.
struct Fixtures: Sendable {
    static let bundleId = "com.example.signet"
    static let count = 40

    /// The test root (PEM) the notifications chain to.
    var rootPEM: String
    /// Genuine notifications (Sandbox, com.example.signet), dated just before now.
    var notifications: [String]
    /// `forged.ndjson`: lines that must be rejected (tampered, rogue root, other app, alg none, ...).
    var forged: [String]
    /// Signed by the same test PKI, but for another app (bundle id com.other.app).
    var wrongBundle: [String]
    /// Signed by the same test PKI, but for the Production environment.
    var wrongEnvironment: [String]

    static let shared: Fixtures = {
        do { return try make() } catch { fatalError("cannot make the fixtures: \(error)") }
    }()

    private static func make() throws -> Fixtures {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("signet-acceptance-fixtures-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // A seed of its own per test process, as `--now` does: ids are new on every run.
        let seed = UInt64(now)
        let main = directory.appendingPathComponent("main")
        let set = FixtureSet(
            directory: main, bundleId: bundleId, environment: .sandbox, seed: seed,
            start: FixtureSet.start(endingBefore: now, count: count))
        let summary = try set.write(count: count)
        precondition(summary.notifications == count)

        /// More notifications signed by the same PKI (its keys are kept in `pki/`).
        func sibling(_ name: String, bundleId: String, environment: AppStoreEnvironment, appAppleId: Int64?, seed: UInt64) throws -> [String] {
            let other = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: main.appendingPathComponent("pki"), to: other.appendingPathComponent("pki"))
            let set = FixtureSet(
                directory: other, bundleId: bundleId, environment: environment, appAppleId: appAppleId, seed: seed,
                start: FixtureSet.start(endingBefore: now, count: 6))
            try set.write(count: 6)
            return try lines(of: other.appendingPathComponent("notifications.ndjson"))
        }

        return Fixtures(
            rootPEM: try String(contentsOf: main.appendingPathComponent("root.pem"), encoding: .utf8),
            notifications: try lines(of: main.appendingPathComponent("notifications.ndjson")),
            forged: try lines(of: main.appendingPathComponent("forged.ndjson")),
            wrongBundle: try sibling("other-app", bundleId: "com.other.app", environment: .sandbox, appAppleId: nil, seed: seed &+ 1),
            wrongEnvironment: try sibling(
                "production", bundleId: bundleId, environment: .production, appAppleId: 1_234_567_890, seed: seed &+ 2))
    }

    private static func lines(of file: URL) throws -> [String] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Writes the test root into `directory` and returns its path (for `AppleRoots.load`).
    func writeRoot(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("root.pem")
        try rootPEM.write(to: path, atomically: true, encoding: .utf8)
        return path.path
    }

    /// The `signedPayload` of a webhook body line.
    static func signedPayload(of line: String) -> String? {
        struct Body: Decodable { var signedPayload: String }
        return try? JSONDecoder().decode(Body.self, from: Data(line.utf8)).signedPayload
    }
}

/// Reason codes of docs/reason-codes.md, by the stage that gives them.
enum DocumentedReasons {
    static let decode: Set<String> = ["invalid_utf8", "malformed_json", "missing_signed_payload"]
    static let verify: Set<String> = [
        "malformed_jws", "unsupported_algorithm", "unsupported_header", "invalid_x5c", "invalid_certificate_chain",
        "missing_apple_oid", "certificate_not_valid_at_signed_date", "signed_date_in_future", "invalid_signature",
        "malformed_payload", "environment_mismatch", "bundle_id_mismatch", "app_apple_id_mismatch", "nested_jws_invalid",
        "certificate_revoked",
    ]
    /// The stage column of the table.
    static func stage(of reason: String) -> String? {
        if decode.contains(reason) { return "decode" }
        if verify.contains(reason) { return "verify" }
        return nil
    }
}

let quietLogger = Logger(label: "acceptance", factory: { _ in SwiftLogNoOpLogHandler() })

func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// Runs `body` with a fresh temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-acceptance-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// A verifier trusting the fixtures' test root, for com.example.signet in the Sandbox.
func fixtureVerifier(in directory: URL, bundleId: String? = Fixtures.bundleId, environment: AppStoreEnvironment? = .sandbox) throws -> AppStoreVerifier {
    let roots = try AppleRoots.load([Fixtures.shared.writeRoot(in: directory)])
    return try AppStoreVerifier(configuration: VerifierConfiguration(roots: roots, environment: environment, bundleId: bundleId))
}

/// A plain `Sink` keeping what it was given; counts its `open()` calls.
final class CapturingSink: Sink {
    private let state = Mutex<(opened: Int, messages: [OutputMessage])>((0, []))
    func open() async throws { state.withLock { $0.opened += 1 } }
    func write(_ messages: [OutputMessage]) async throws { state.withLock { $0.messages.append(contentsOf: messages) } }
    var messages: [OutputMessage] { state.withLock { $0.messages } }
    var openCount: Int { state.withLock { $0.opened } }
}

/// An `EntitlementEventSink` keeping the typed events it received.
final class CapturingEventSink: EntitlementEventSink {
    private let state = Mutex<[EntitlementEvent]>([])
    func write(events: [EntitlementEvent]) async throws { state.withLock { $0.append(contentsOf: events) } }
    var events: [EntitlementEvent] { state.withLock { $0 } }
}

/// A source over lines in memory that counts how often it was opened and asked for input.
final class RecordingSource: Source {
    private let state: Mutex<(opened: Int, asked: Int, pending: [Record], stopped: Bool)>
    init(lines: [String]) {
        let records = lines.enumerated().map { index, line in
            Record(raw: Array(line.utf8), position: SourcePosition(stream: "memory", offset: Int64(index)))
        }
        state = Mutex((0, 0, records, false))
    }
    func open() async throws { state.withLock { $0.opened += 1 } }
    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        state.withLock { state in
            state.asked += 1
            guard !state.stopped, !state.pending.isEmpty else { return nil }
            let batch = Array(state.pending.prefix(maxRecords))
            state.pending.removeFirst(batch.count)
            return batch
        }
    }
    func stop() async { state.withLock { $0.stopped = true } }
    var openCount: Int { state.withLock { $0.opened } }
    var askCount: Int { state.withLock { $0.asked } }
}

/// One dead-letter record (json format: docs/pipelines.md, "Dead letters").
struct DeadLetter: Sendable {
    var reason: String
    var stage: String
    var id: String?
    /// The rejected input: `input`, or `inputBase64` decoded.
    var input: String?

    init(_ message: OutputMessage) throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
        reason = try #require(object["reason"] as? String, "a dead letter without reason: \(String(decoding: message.value, as: UTF8.self))")
        stage = try #require(object["stage"] as? String)
        id = object["id"] as? String
        if let text = object["input"] as? String {
            input = text
        } else if let base64 = object["inputBase64"] as? String, let data = Data(base64Encoded: base64) {
            input = String(decoding: data, as: UTF8.self)
        }
    }
}

/// What one run produced.
struct RunResult: Sendable {
    var summary: RunSummary
    /// What a plain sink received.
    var messages: [OutputMessage]
    /// What an `EntitlementEventSink` beside it received.
    var events: [EntitlementEvent]
    var deadLetters: [DeadLetter]
}

/// Runs `lines` (written to DIR/NAME.ndjson, read by a `LineSource`) through `stages`, into a
/// plain sink and a typed sink, with a capturing dead-letter sink.
func runPipeline(
    lines: [String], stages: [any Stage], in directory: URL, name: String = "input", settings: PipelineSettings = PipelineSettings()
) async throws -> RunResult {
    let input = directory.appendingPathComponent("\(name).ndjson")
    try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
    let plain = CapturingSink()
    let typed = CapturingEventSink()
    let dead = CapturingSink()
    let pipeline = try Pipeline(
        source: LineSource(path: input.path), stages: stages,
        sinks: [NamedSink(name: "plain", sink: plain), NamedSink(name: "typed", sink: typed)],
        deadLetter: DeadLetterOutput(sink: dead), settings: settings)
    let summary = try await PipelineRunner(pipeline: pipeline, logger: quietLogger).run()
    return RunResult(summary: summary, messages: plain.messages, events: typed.events, deadLetters: try dead.messages.map(DeadLetter.init))
}

/// The last event of each purchase, in the order received.
func lastEventByPurchase(_ events: [EntitlementEvent]) -> [String: EntitlementEvent] {
    var last: [String: EntitlementEvent] = [:]
    for event in events { if let purchase = event.originalTransactionId { last[purchase] = event } }
    return last
}

struct TimeoutError: Error, CustomStringConvertible {
    var description: String
}

/// `body`'s result, or a `TimeoutError` after `seconds`.
func withTimeout<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimeoutError(description: "\(what) took longer than \(seconds) s")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

import AppStoreModels
import Foundation
import SignetFixtures
import SignetKafka
import SignetState
import SignetTestSupport
import Synchronization
import Testing

// Helpers for the Kafka end-to-end tests: child processes (the `signet` binary, kcat) that
// are always stopped, the shared input (fixtures plus per-subscription chains), the stdin
// reference run, and the comparison of what reached the topics with that reference.
//
// Everything talks to 127.0.0.1 only (the mock broker binds loopback; kcat is pointed at it).

// MARK: - Errors and time

struct KafkaE2EFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes; returns whether it held.
@discardableResult
func eventually(
    timeout: Duration, interval: Duration = .milliseconds(200), _ condition: () throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}

// MARK: - Child processes

/// A `signet run` started by a Kafka test: a ``ChildProcess`` under a name for messages.
/// ``KafkaScope`` SIGKILLs whatever still runs when the test ends, also when it fails.
final class KafkaChild: Sendable {
    let name: String
    let process: ChildProcess

    init(name: String, executable: URL, arguments: [String], environment: [String: String], directory: URL) throws {
        self.name = name
        process = try ChildProcess(executable, arguments, environment: environment, currentDirectory: directory, stdin: false)
    }

    var pid: Int32 { process.pid }
    var isRunning: Bool { process.isRunning }
    var stdout: String { process.stdoutText }
    var stderr: String { process.stderrText }
    /// Whether it was killed by a signal (the status is then the signal number).
    var killedBySignal: Bool { process.killedBySignal }

    /// Sends `signal` if the process still runs.
    func send(_ signal: Int32) { process.send(signal) }

    /// Waits up to `timeout` for the exit; the exit status (or signal number), nil on timeout.
    func waitForExit(timeout: Duration) async throws -> Int32? { await process.exit(within: timeout) }

    /// SIGKILL and reap (idempotent).
    func stop() { process.stop() }

    /// The last `count` lines of stderr, for failure messages.
    func stderrTail(_ count: Int = 15) -> String { process.stderrTail(count) }
}

/// Everything one test owns: a temporary directory, child processes, in-process clusters.
/// `close()` (call it in a `defer`) kills the children, stops the clusters, removes the files.
final class KafkaScope: @unchecked Sendable {
    let directory: TemporaryDirectory
    private let children = Mutex<[KafkaChild]>([])
    private let clusters = Mutex<[MockCluster]>([])

    init(_ prefix: String) throws {
        directory = try TemporaryDirectory(prefix: "signet-kafka-e2e-\(prefix)")
    }

    func path(_ name: String) -> String { directory.path(name) }
    var url: URL { directory.url }

    func cluster(topics: [(String, Int)], brokers: Int = 1) throws -> MockCluster {
        let cluster = try MockCluster(brokers: brokers)
        clusters.withLock { $0.append(cluster) }
        for (name, partitions) in topics { try cluster.createTopic(name, partitions: partitions) }
        return cluster
    }

    func start(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> KafkaChild {
        let child = try KafkaChild(
            name: name, executable: SignetProcess.executable, arguments: arguments, environment: environment,
            directory: directory.url)
        children.withLock { $0.append(child) }
        return child
    }

    /// Starts `signet run --pipeline <pipeline>` with the given settings.
    func startPipeline(
        _ name: String, _ settings: PipelineSettings, pipeline: String = KafkaInput.kafkaPipeline,
        extraEnvironment: [String: String] = [:], summary: Bool = true
    ) throws -> KafkaChild {
        var arguments = ["run", "--pipeline", pipeline]
        if summary { arguments += ["--summary-json", path("\(name).summary.json")] }
        return try start(name, arguments, environment: settings.environment.merging(extraEnvironment) { $1 })
    }

    /// The summary a pipeline child wrote at a clean exit.
    func summary(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path("\(name).summary.json")))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw KafkaE2EFailure("summary of \(name) is not a JSON object")
        }
        return object
    }

    func close() {
        for child in children.withLock({ $0 }) { child.stop() }
        for cluster in clusters.withLock({ $0 }) { cluster.close() }
        directory.remove()
    }
}

/// The SIGNET_* environment of one pipeline process (Pipelines/kafka.yaml).
struct PipelineSettings {
    var brokers: String
    var group: String
    var dataDir: String
    var input = "notifications"
    var output = "entitlements"
    var deadLetters = "dead-letters"
    var sessionTimeoutMs = 4000

    var environment: [String: String] {
        [
            "SIGNET_KAFKA_BROKERS": brokers, "SIGNET_KAFKA_GROUP": group,
            "SIGNET_INPUT_TOPIC": input, "SIGNET_OUTPUT_TOPIC": output, "SIGNET_DEAD_LETTER_TOPIC": deadLetters,
            "SIGNET_KAFKA_SESSION_TIMEOUT_MS": String(sessionTimeoutMs), "SIGNET_KAFKA_HEARTBEAT_MS": "1000",
            "SIGNET_KAFKA_FETCH_WAIT_MS": "10", "SIGNET_DATA_DIR": dataDir,
            "SIGNET_ROOT_CERTS": KafkaInput.rootPath, "SIGNET_ENVIRONMENT": "Sandbox",
            "SIGNET_BUNDLE_ID": KafkaInput.bundleId,
            // Instances run side by side: each its own free port for the operators' listener.
            "SIGNET_ADMIN_ADDRESS": "127.0.0.1:0",
        ]
    }
}

// MARK: - kcat, the independent client

/// One message as kcat -J prints it.
struct KafkaMessage: Sendable {
    var partition: Int
    var offset: Int64
    var timestamp: Int64
    var key: String?
    var payload: String
    var headers: [(String, String)]

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    var headerText: String { headers.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{1}") }
}

enum Kcat {
    static let executable = URL(fileURLWithPath: "/usr/bin/kcat")
    static let common = ["-X", "broker.address.family=v4", "-X", "log_level=3"]

    /// Runs kcat with a hard timeout (then SIGKILL, status -1); returns status, stdout, stderr.
    static func run(_ arguments: [String], input: Data = Data(), timeout: Duration = .seconds(30)) throws -> (Int32, Data, String) {
        let result = try SignetProcess.run(
            executable: executable, arguments, stdin: input, timeout: Double(timeout.components.seconds))
        return (result.exitCode, result.stdout, result.stderr)
    }

    /// Produces `key<TAB>value` lines (values never contain tabs or newlines).
    static func produce(brokers: String, topic: String, _ lines: [InputLine]) throws {
        guard !lines.isEmpty else { return }
        var text = ""
        for line in lines { text += line.key + "\t" + line.value + "\n" }
        let (status, _, stderr) = try run(
            ["-P", "-b", brokers, "-t", topic, "-K\t", "-X", "linger.ms=2"] + common, input: Data(text.utf8))
        guard status == 0 else { throw KafkaE2EFailure("kcat -P \(topic) failed (\(status)): \(stderr)") }
    }

    /// Produces unkeyed values (one message per line).
    static func produce(brokers: String, topic: String, values: [String]) throws {
        guard !values.isEmpty else { return }
        let (status, _, stderr) = try run(
            ["-P", "-b", brokers, "-t", topic] + common, input: Data((values.joined(separator: "\n") + "\n").utf8))
        guard status == 0 else { throw KafkaE2EFailure("kcat -P \(topic) failed (\(status)): \(stderr)") }
    }

    /// Reads a whole topic from the beginning to its current end.
    static func readAll(brokers: String, topic: String) throws -> [KafkaMessage] {
        let (status, out, stderr) = try run(
            ["-C", "-b", brokers, "-t", topic, "-o", "beginning", "-e", "-q", "-J"] + common)
        guard status == 0 else { throw KafkaE2EFailure("kcat -C \(topic) failed (\(status)): \(stderr)") }
        return try parse(out)
    }

    /// A balanced consumer in `group` (kcat -G) that commits nothing: what it reads is what the
    /// group's committed offsets leave unread.
    static func readUncommitted(brokers: String, group: String, topic: String, timeout: Duration) throws -> [KafkaMessage] {
        let (_, out, _) = try run(
            ["-C", "-b", brokers, "-G", group, topic, "-e", "-q", "-J",
             // Both off: kcat -G otherwise commits what it read when it exits.
             "-X", "enable.auto.commit=false", "-X", "enable.auto.offset.store=false", "-X", "auto.offset.reset=earliest",
             "-X", "session.timeout.ms=4000", "-X", "heartbeat.interval.ms=1000", "-X", "fetch.wait.max.ms=10"] + common,
            timeout: timeout)
        return try parse(out)
    }

    static func parse(_ data: Data) throws -> [KafkaMessage] {
        var messages: [KafkaMessage] = []
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                throw KafkaE2EFailure("kcat -J printed a non-object: \(String(decoding: line, as: UTF8.self))")
            }
            let flat = object["headers"] as? [String] ?? []
            var headers: [(String, String)] = []
            var index = 0
            while index + 1 < flat.count {
                headers.append((flat[index], flat[index + 1]))
                index += 2
            }
            messages.append(KafkaMessage(
                partition: object["partition"] as? Int ?? -1,
                offset: (object["offset"] as? NSNumber)?.int64Value ?? -1,
                timestamp: (object["ts"] as? NSNumber)?.int64Value ?? 0,
                key: object["key"] as? String,
                payload: object["payload"] as? String ?? "",
                headers: headers))
        }
        return messages
    }
}

// MARK: - Input

/// One input message: its key (originalTransactionId, or notificationUUID when there is no
/// transaction) and its value (a `{"signedPayload": ...}` line).
struct InputLine: Sendable, Hashable {
    var key: String
    var value: String
    var notificationUUID: String
    var originalTransactionId: String?
}

/// The input all Kafka end-to-end tests share, made once per test process: `signet fixtures`
/// output (one notification per purchase) interleaved with chains of several notifications for
/// the same purchase (the fixture PKI signs them), so that per-key order and state matter.
enum KafkaInput {
    static let bundleId = "com.example.signet"
    /// Pipelines/kafka.yaml, or KAFKA_E2E_PIPELINE (a modified copy, for diagnosing a failure).
    static let kafkaPipeline = ProcessInfo.processInfo.environment["KAFKA_E2E_PIPELINE"]
        ?? FixturePaths.packageRoot.appendingPathComponent("Pipelines/kafka.yaml").path
    static let fixtureCount = 120
    static let chainCount = 24
    static let chainLength = 5

    struct Material: Sendable {
        var directory: URL
        var rootPath: String
        var lines: [InputLine]
        var forged: [String]
    }

    /// Built on first use; lives in a directory removed at process exit is not needed: /tmp is
    /// cleaned with the rest of the run (it is small).
    static let material: Result<Material, KafkaE2EFailure> = {
        do { return .success(try build()) } catch {
            return .failure(KafkaE2EFailure("cannot build the Kafka test input: \(error)"))
        }
    }()

    static var rootPath: String { (try? material.get().rootPath) ?? "" }

    static func get() throws -> Material { try material.get() }

    private static func build() throws -> Material {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-kafka-e2e-input-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        let result = try SignetProcess.run(["fixtures", "--out", directory.path, "--count", String(fixtureCount)], timeout: 120)
        guard result.exitCode == 0 else { throw KafkaE2EFailure("signet fixtures failed: \(result.stderr)") }
        let fixtureLines = try String(contentsOf: directory.appendingPathComponent("notifications.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let forged = try String(contentsOf: directory.appendingPathComponent("forged.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)

        // Chains: subscription samples of another seed, re-pointed at a few purchases.
        let pki = try FixtureSet(directory: directory).loadOrCreatePKI()
        let signer = pki.signer
        var generator = SampleNotificationGenerator(seed: 4242, bundleId: bundleId, environment: .sandbox, appAppleId: nil)
        var chainLines: [String] = []
        var taken = 0
        var attempts = 0
        while taken < chainCount * chainLength, attempts < 10_000 {
            attempts += 1
            let sample = generator.next()
            guard let transaction = sample.transactionPayload, let renewal = sample.renewalPayload,
                let original = sample.originalTransactionId
            else { continue }
            let target = "2000000999" + String(format: "%06d", taken % chainCount)
            func repoint(_ bytes: [UInt8]) -> [UInt8] {
                Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(
                    of: "\"originalTransactionId\":\"\(original)\"", with: "\"originalTransactionId\":\"\(target)\"").utf8)
            }
            let signedTransaction = try signer.sign(payload: repoint(transaction))
            let signedRenewal = try signer.sign(payload: repoint(renewal))
            let payload = sample.notificationJSON(signedTransactionInfo: signedTransaction, signedRenewalInfo: signedRenewal)
            chainLines.append("{\"signedPayload\":\"\(try signer.sign(payload: payload))\"}")
            taken += 1
        }
        guard taken == chainCount * chainLength else { throw KafkaE2EFailure("not enough subscription samples for chains") }

        var lines: [InputLine] = []
        for index in 0..<max(fixtureLines.count, chainLines.count) {
            if index < fixtureLines.count { lines.append(try describe(fixtureLines[index])) }
            if index < chainLines.count { lines.append(try describe(chainLines[index])) }
        }
        return Material(
            directory: directory, rootPath: directory.appendingPathComponent("root.pem").path, lines: lines, forged: forged)
    }

    /// The key of a line: its purchase's originalTransactionId (read without verifying).
    static func describe(_ line: String) throws -> InputLine {
        guard let envelope = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let jws = envelope["signedPayload"] as? String, let notification = jwsPayload(jws)
        else { throw KafkaE2EFailure("not a notification line: \(line.prefix(80))") }
        let uuid = notification["notificationUUID"] as? String ?? UUID().uuidString
        var original: String?
        if let data = notification["data"] as? [String: Any], let transaction = data["signedTransactionInfo"] as? String {
            original = jwsPayload(transaction)?["originalTransactionId"] as? String
        }
        return InputLine(key: original ?? uuid, value: line, notificationUUID: uuid, originalTransactionId: original)
    }

    static func jwsPayload(_ jws: String) -> [String: Any]? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }
}

// MARK: - Reference (the stdin pipeline on the same input)

/// What `signet run` (stdin pipeline, fresh data dir) makes of the same input: the events in
/// order, by id, per purchase, and the resulting state.
final class KafkaReference: @unchecked Sendable {
    let events: [String]
    let byId: [String: String]
    /// Event ids per originalTransactionId (the Kafka key), in emission order.
    let orderByKey: [String: [String]]
    /// notificationUUID of the input -> the ids of the events it caused.
    let eventsBySource: [String: [String]]
    let dataDir: URL
    let deadLetters: [[String: Any]]

    init(lines: [String], scope: KafkaScope, name: String) throws {
        dataDir = scope.url.appendingPathComponent("\(name)-reference-data")
        let result = try SignetProcess.run(
            ["run"], stdin: Data((lines.joined(separator: "\n") + "\n").utf8),
            environment: [
                "SIGNET_DATA_DIR": dataDir.path, "SIGNET_ROOT_CERTS": KafkaInput.rootPath,
                "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_BUNDLE_ID": KafkaInput.bundleId,
            ], timeout: 120)
        guard result.exitCode == 0 else { throw KafkaE2EFailure("reference run failed (\(result.exitCode)): \(result.stderr)") }
        events = result.lines
        var byId: [String: String] = [:]
        var order: [String: [String]] = [:]
        var bySource: [String: [String]] = [:]
        for line in events {
            let event = try Self.decode(line)
            byId[event.id] = line
            order[event.key, default: []].append(event.id)
            bySource[event.source, default: []].append(event.id)
        }
        self.byId = byId
        orderByKey = order
        eventsBySource = bySource
        let deadLetterFile = dataDir.appendingPathComponent("dead-letter.ndjson")
        let text = (try? String(contentsOf: deadLetterFile, encoding: .utf8)) ?? ""
        deadLetters = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func decode(_ payload: String) throws -> (id: String, key: String, type: String, source: String) {
        guard let object = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let id = object["eventId"] as? String
        else { throw KafkaE2EFailure("not an entitlement event: \(payload.prefix(120))") }
        // The message key: the purchase, or an app-level event's app transaction.
        return (id, object["originalTransactionId"] as? String ?? object["appTransactionId"] as? String ?? "", object["type"] as? String ?? "",
                object["notificationUUID"] as? String ?? "")
    }

    /// The reference restricted to the events caused by these inputs.
    func ids(causedBy inputs: [InputLine]) -> Set<String> {
        Set(inputs.flatMap { eventsBySource[$0.notificationUUID] ?? [] })
    }

    var originalTransactionIds: [String] { orderByKey.keys.filter { !$0.isEmpty }.sorted() }
}

// MARK: - Checks

/// How many distinct reference events are in `messages`.
func distinctEventIds(_ messages: [KafkaMessage]) -> Set<String> {
    Set(messages.compactMap { $0.header("signet-event-id") })
}

/// Checks the output topic against the reference: every expected event present (and no other),
/// each copy byte-identical to the reference (value, key, headers), headers and key right, and
/// the order of first appearance per key the reference's order. Duplicates only when allowed.
func checkEvents(
    _ messages: [KafkaMessage], against reference: KafkaReference, expected: Set<String>? = nil,
    allowDuplicates: Bool, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let expectedIds = expected ?? Set(reference.byId.keys)
    var copies: [String: [KafkaMessage]] = [:]
    var malformed = 0
    for message in messages {
        let event = try KafkaReference.decode(message.payload)
        copies[event.id, default: []].append(message)
        if message.header("signet-event-id") != event.id || message.header("signet-event-type") != event.type
            || message.key != event.key
        {
            malformed += 1
        }
    }
    #expect(malformed == 0, "\(malformed) messages with a key or signet-event-id/-type header not matching the event", sourceLocation: sourceLocation)
    let seen = Set(copies.keys)
    let missing = expectedIds.subtracting(seen)
    let unexpected = seen.subtracting(expectedIds)
    #expect(missing.isEmpty, "\(missing.count) of \(expectedIds.count) expected events never reached the topic, e.g. \(missing.sorted().prefix(3))", sourceLocation: sourceLocation)
    #expect(unexpected.isEmpty, "\(unexpected.count) events not in the reference (a state change applied twice or differently?), e.g. \(unexpected.sorted().prefix(3).map { copies[$0]?.first?.payload.prefix(300) ?? "" })", sourceLocation: sourceLocation)

    var differing: [String] = []
    var duplicated = 0
    for (id, list) in copies {
        if list.count > 1 { duplicated += 1 }
        if let want = reference.byId[id], list.contains(where: { $0.payload != want }) { differing.append(id) }
        if let first = list.first, list.contains(where: { $0.key != first.key || $0.headerText != first.headerText }) {
            differing.append(id)
        }
    }
    #expect(differing.isEmpty, "\(differing.count) events whose copies are not byte-identical to the reference, e.g. \(differing.prefix(2).map { id in (reference.byId[id]?.prefix(400) ?? "none") + "  <-  got: " + (copies[id]?.first?.payload.prefix(400) ?? "") })", sourceLocation: sourceLocation)
    if !allowDuplicates {
        #expect(duplicated == 0, "\(duplicated) events were published more than once", sourceLocation: sourceLocation)
    }

    // Per key: one partition, order of first appearance = the reference's order.
    var byKey: [String: [KafkaMessage]] = [:]
    for message in messages { byKey[message.key ?? "", default: []].append(message) }
    var outOfOrder: [String] = []
    var spread: [String] = []
    for (key, list) in byKey {
        if Set(list.map(\.partition)).count > 1 { spread.append(key) }
        var order: [String] = []
        for message in list.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
            if let id = message.header("signet-event-id"), !order.contains(id) { order.append(id) }
        }
        let want = (reference.orderByKey[key] ?? []).filter { expectedIds.contains($0) }
        if order != want, Set(order) == Set(want) { outOfOrder.append(key) }
    }
    #expect(spread.isEmpty, "keys published to more than one partition: \(spread.prefix(3))", sourceLocation: sourceLocation)
    #expect(outOfOrder.isEmpty, "per-key order differs from the reference for \(outOfOrder.count) keys, e.g. \(outOfOrder.prefix(3))", sourceLocation: sourceLocation)
}

/// The stored snapshot of every purchase, as sorted JSON, read with the library (read-only).
func stateSnapshots(dataDir: URL, keys: [String]) throws -> [String: String] {
    var options = SQLiteStateStore.Options()
    options.readOnly = true
    let store = try SQLiteStateStore(path: dataDir.appendingPathComponent("signet.sqlite").path, options: options)
    defer { try? store.close() }
    return try stateSnapshots(store: store, keys: keys)
}

/// Each purchase's stored snapshot as sorted-key JSON ("none" when absent), from any store.
func stateSnapshots(store: any StoreRoles, keys: [String]) throws -> [String: String] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    var result: [String: String] = [:]
    for key in keys {
        if let snapshot = try store.subscription(originalTransactionId: key) {
            result[key] = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
        } else {
            result[key] = "none"
        }
    }
    return result
}

/// Compares the state of a Kafka run's data dir with the reference's, purchase by purchase.
func checkState(dataDir: URL, reference: KafkaReference, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let keys = reference.originalTransactionIds
    let want = try stateSnapshots(dataDir: reference.dataDir, keys: keys)
    let got = try stateSnapshots(dataDir: dataDir, keys: keys)
    let differing = keys.filter { want[$0] != got[$0] }
    #expect(differing.isEmpty, "state differs from the reference for \(differing.count) of \(keys.count) purchases, e.g. \(differing.prefix(1).map { "\($0): want \(want[$0] ?? "") got \(got[$0] ?? "")" })", sourceLocation: sourceLocation)
}

/// Produces `lines` in chunks with a pause between them (a stream, not one burst).
func producePaced(brokers: String, topic: String, _ lines: [InputLine], chunk: Int = 40, pause: Duration = .milliseconds(150)) async throws {
    var start = 0
    while start < lines.count {
        let end = min(start + chunk, lines.count)
        try Kcat.produce(brokers: brokers, topic: topic, Array(lines[start..<end]))
        start = end
        if start < lines.count { try await Task.sleep(for: pause) }
    }
}

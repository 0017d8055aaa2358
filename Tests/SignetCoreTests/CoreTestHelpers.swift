import Foundation
import Synchronization
import Testing

@testable import SignetCore

// MARK: - Temp files

/// A fresh directory under the system temp dir; call `remove()` when done.
struct CoreTempDir {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("signet-core-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let file = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try write(name, bytes: Array(text.utf8)) }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

// MARK: - Shared event log

/// A thread-safe, ordered log shared by sources, stages and sinks of one test.
final class EventLog: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ event: String) { storage.withLock { $0.append(event) } }
    var events: [String] { storage.withLock { $0 } }
    func index(of event: String) -> Int? { events.firstIndex(of: event) }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - In-memory source

/// Serves `lines` (or an endless stream) as records `stream:1`, `stream:2`, ... and records commits.
final class MemorySource: Source {
    let stream: String
    private let lines: [[UInt8]]?
    private let log: EventLog?
    private struct State {
        var next = 0
        var stopped = false
        var commits: [[SourcePosition]] = []
        var opened = 0
        var closed = 0
        var batchesServed = 0
    }
    private let state = Mutex(State())

    init(lines: [String], stream: String = "mem", log: EventLog? = nil) {
        self.lines = lines.map { Array($0.utf8) }
        self.stream = stream
        self.log = log
    }

    init(rawLines: [[UInt8]], stream: String = "mem", log: EventLog? = nil) {
        self.lines = rawLines
        self.stream = stream
        self.log = log
    }

    /// An endless source of `r<n>` lines that ends only when stopped.
    init(endlessStream stream: String = "live", log: EventLog? = nil) {
        self.lines = nil
        self.stream = stream
        self.log = log
    }

    func open() async throws { state.withLock { $0.opened += 1 } }
    func close() async throws { state.withLock { $0.closed += 1 } }

    func nextBatch(maxRecords: Int) async throws -> [Record]? {
        let batch: [Record]? = state.withLock { state in
            if state.stopped { return nil }
            var records: [Record] = []
            while records.count < maxRecords {
                let raw: [UInt8]
                if let lines {
                    guard state.next < lines.count else { break }
                    raw = lines[state.next]
                } else {
                    raw = Array("r\(state.next + 1)".utf8)
                }
                state.next += 1
                records.append(Record(raw: raw, position: SourcePosition(stream: stream, offset: Int64(state.next))))
            }
            if records.isEmpty { return nil }
            state.batchesServed += 1
            return records
        }
        if let batch { log?.append("read:" + batch.map { String($0.position.offset) }.joined(separator: ",")) }
        return batch
    }

    func commit(_ positions: [SourcePosition]) async throws {
        state.withLock { $0.commits.append(positions) }
        log?.append("commit:" + positions.map { String($0.offset) }.joined(separator: ","))
    }

    func stop() async { state.withLock { $0.stopped = true } }

    var commits: [[SourcePosition]] { state.withLock { $0.commits } }
    var committedOffsets: [Int64] { commits.flatMap { $0.map(\.offset) } }
    var openCount: Int { state.withLock { $0.opened } }
    var closeCount: Int { state.withLock { $0.closed } }
    var readCount: Int { state.withLock { $0.next } }
}

// MARK: - Capture sink

/// Keeps every delivered message; can fail a number of times first, or forever for some messages.
final class CaptureSink: Sink {
    let name: String
    private let log: EventLog?
    private struct State {
        var messages: [OutputMessage] = []
        var failuresLeft: Int
        var attempts = 0
        var opened = 0
        var closed = 0
    }
    private let state: Mutex<State>
    /// Messages for which a write fails no matter how often it is retried.
    private let poison: (@Sendable (OutputMessage) -> Bool)?
    /// Called after a successful write, with the total messages delivered so far.
    private let onWrite: (@Sendable (Int) async -> Void)?

    init(
        name: String = "capture", log: EventLog? = nil, failTimes: Int = 0,
        poison: (@Sendable (OutputMessage) -> Bool)? = nil, onWrite: (@Sendable (Int) async -> Void)? = nil
    ) {
        self.name = name
        self.log = log
        self.state = Mutex(State(failuresLeft: failTimes))
        self.poison = poison
        self.onWrite = onWrite
    }

    func open() async throws { state.withLock { $0.opened += 1 } }
    func close() async throws { state.withLock { $0.closed += 1 } }

    func write(_ messages: [OutputMessage]) async throws {
        let text = messages.map { String(decoding: $0.key ?? $0.value, as: UTF8.self) }.joined(separator: ",")
        let failure: Bool = state.withLock { state in
            state.attempts += 1
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                return true
            }
            return false
        }
        if failure || messages.contains(where: { poison?($0) ?? false }) {
            log?.append("fail \(name):" + text)
            throw TestFailure("sink \(name) is down")
        }
        let total = state.withLock { state in
            state.messages.append(contentsOf: messages)
            return state.messages.count
        }
        log?.append("write \(name):" + text)
        await onWrite?(total)
    }

    var messages: [OutputMessage] { state.withLock { $0.messages } }
    var values: [String] { messages.map { String(decoding: $0.value, as: UTF8.self) } }
    var attempts: Int { state.withLock { $0.attempts } }
    var openCount: Int { state.withLock { $0.opened } }
    var closeCount: Int { state.withLock { $0.closed } }

    /// The delivered dead-letter JSON objects.
    func jsonObjects() throws -> [[String: Any]] {
        try messages.map { message in
            guard let object = try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any] else {
                throw TestFailure("not a JSON object: \(String(decoding: message.value, as: UTF8.self))")
            }
            return object
        }
    }
}

// MARK: - Stages

/// Rejects lines containing "bad" (reason `test_bad`), drops lines containing "dup", and
/// emits `out:<line>` keyed by the line's offset for everything else.
struct CheckStage: RecordStage {
    var name: String = "check"
    var parallelism: Int = 1

    func process(record: inout Record) throws(RecordRejection) {
        let text = String(decoding: record.raw, as: UTF8.self)
        if text.contains("bad") { throw RecordRejection("test_bad", "line says bad: \(text)") }
        if text.contains("dup") {
            record.drop(reason: "duplicate")
            return
        }
        record.outputs.append(OutputMessage(key: Array(String(record.position.offset).utf8), value: Array("out:\(text)".utf8)))
    }
}

/// Counts how often each record offset was processed (for parallelism checks).
final class CountingStage: RecordStage {
    let name = "count"
    let parallelism: Int
    private let seen = Mutex<[Int64: Int]>([:])
    init(parallelism: Int) { self.parallelism = parallelism }

    func process(record: inout Record) throws(RecordRejection) {
        let offset = record.position.offset
        seen.withLock { $0[offset, default: 0] += 1 }
        // Some real work so that workers overlap.
        var hash: UInt64 = 1469598103934665603
        for byte in record.raw { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
        record.outputs.append(OutputMessage(value: Array("\(offset):\(hash)".utf8)))
    }

    var counts: [Int64: Int] { seen.withLock { $0 } }
}

/// Logs process/acknowledge calls; optionally serves an outbox of undelivered records.
final class LoggingStage: Stage {
    let name: String
    private let log: EventLog
    private let outbox = Mutex<RecordBatch?>(nil)
    private let acknowledged = Mutex<[RecordBatch]>([])
    /// Appended to every active record's outputs' values (to show which stages a record passed).
    private let marker: String?
    private let failOnBatchContaining: Int64?

    init(name: String, log: EventLog, marker: String? = nil, outbox: RecordBatch? = nil, failOnBatchContaining: Int64? = nil) {
        self.name = name
        self.log = log
        self.marker = marker
        self.outbox.withLock { $0 = outbox }
        self.failOnBatchContaining = failOnBatchContaining
    }

    func process(_ batch: inout RecordBatch) async throws {
        log.append("process \(name):" + batch.records.map { String($0.position.offset) }.joined(separator: ",")
            + (batch.isRedelivery ? " (redelivery)" : ""))
        if let failOnBatchContaining, batch.records.contains(where: { $0.position.offset == failOnBatchContaining }) {
            throw TestFailure("stage \(name) lost its database")
        }
        if let marker {
            batch.forEachActive { record in
                for index in record.outputs.indices { record.outputs[index].value += Array(marker.utf8) }
            }
        }
    }

    func acknowledge(_ batch: RecordBatch) async throws {
        acknowledged.withLock { $0.append(batch) }
        log.append("ack \(name):" + batch.records.map { String($0.position.offset) }.joined(separator: ",")
            + (batch.isRedelivery ? " (redelivery)" : ""))
    }

    func undeliveredOutputs() async throws -> RecordBatch? {
        outbox.withLock { batch in
            defer { batch = nil }
            return batch
        }
    }

    var acknowledgedBatches: [RecordBatch] { acknowledged.withLock { $0 } }
}

// MARK: - Config helpers

func coreRegistry() -> ComponentRegistry {
    var registry = ComponentRegistry()
    registry.registerCoreComponents()
    return registry
}

/// Loads YAML expecting failure; returns the errors (records an issue when it loads).
func loadErrors(
    _ yaml: String, registry: ComponentRegistry = coreRegistry(), environment: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
) -> [ConfigError] {
    do {
        _ = try PipelineLoader(registry: registry, environment: environment).load(yaml: yaml, file: "p.yaml")
        Issue.record("expected the pipeline to be rejected", sourceLocation: sourceLocation)
        return []
    } catch {
        return error.errors
    }
}

func parseNode(_ yaml: String, environment: [String: String] = [:]) throws(ConfigError) -> ConfigNode {
    try ConfigNode.parse(yaml: yaml, file: "c.yaml", environment: environment)
}

/// The child value node for a dotted key path of mappings.
func child(_ node: ConfigNode, _ path: String) -> ConfigNode? {
    var current = node
    for component in path.split(separator: ".") {
        guard case .mapping(let pairs) = current.value,
            let pair = pairs.first(where: { if case .scalar(String(component)) = $0.key.value { true } else { false } })
        else { return nil }
        current = pair.value
    }
    return current
}

func scalar(_ node: ConfigNode?) -> String? {
    if case .scalar(let text)? = node?.value { return text }
    return nil
}

func isNull(_ node: ConfigNode?) -> Bool {
    if case .null? = node?.value { return true }
    return false
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Settings for fast tests: no progress task, quick give-up on failing sinks unless asked otherwise.
func testSettings(batchSize: Int = 256, sinkRetryTimeout: Duration = .seconds(60)) -> PipelineSettings {
    var settings = PipelineSettings()
    settings.batchSize = batchSize
    settings.progressInterval = nil
    settings.sinkRetryTimeout = sinkRetryTimeout
    return settings
}

// MARK: - Refusing sink

/// Accepts every message except those `refuses` matches, which it refuses for good
/// (``UndeliverableMessages``, as the http sink does on a 4xx).
final class RefusingSink: Sink {
    private let refuses: @Sendable (OutputMessage) -> Bool
    private let accepted = Mutex<[OutputMessage]>([])

    init(refusing refuses: @escaping @Sendable (OutputMessage) -> Bool) { self.refuses = refuses }

    func write(_ messages: [OutputMessage]) async throws {
        let refusals = messages.indices.filter { refuses(messages[$0]) }.map {
            UndeliverableMessages.Refusal(index: $0, rejection: RecordRejection("test_refused", "refused: \(text(messages[$0].value))"))
        }
        accepted.withLock { $0 += messages.indices.filter { !refuses(messages[$0]) }.map { messages[$0] } }
        if !refusals.isEmpty { throw UndeliverableMessages(refusals) }
    }

    var values: [String] { accepted.withLock { $0.map { text($0.value) } } }
}

// MARK: - Ticking stage

/// Passes records through and, every `interval`, generates one record (as an expiry
/// sweep does); its process waits `delay` per batch so that ticks fall due during a run.
final class SweepingStage: TickingStage {
    let name = "sweep"
    let tickInterval: Duration?
    private let delay: Duration
    private let ticks = Mutex(0)

    init(interval: Duration, delay: Duration) {
        tickInterval = interval
        self.delay = delay
    }

    func process(_ batch: inout RecordBatch) async throws { try await Task.sleep(for: delay) }

    func tick() async throws -> RecordBatch? {
        let number = ticks.withLock { ticks in
            ticks += 1
            return ticks
        }
        var record = Record(raw: Array("sweep\(number)".utf8), position: SourcePosition(stream: "sweep", offset: Int64(number)))
        record.outputs.append(OutputMessage(value: Array("swept:\(number)".utf8), headers: [.init(.eventType, "expired")]))
        return RecordBatch(records: [record])
    }

    var tickCount: Int { ticks.withLock { $0 } }
}

import Foundation
import SignetCore
import SignetHTTP
import SignetOpenSSL
import SignetTestSupport
import Testing
import Prometheus

@Suite("http sink against a real local server that fails, times out and recovers")
struct HTTPSinkTests {
    static let secret = "shared-secret-for-tests"

    /// Event ids the receiver answered 200: at once, or after its "timeout" delay when the sink
    /// did not send that event again (on a loaded machine the answer can beat the sink's timer).
    static func deliveredEventIds(_ requests: [[String: Any]]) throws -> [String] {
        var ids: [String] = []
        var lastAction: [String: String] = [:]
        for request in requests.sorted(by: { ($0["n"] as? Int ?? 0) < ($1["n"] as? Int ?? 0) }) {
            let body = try #require(request["body"] as? String)
            let parsed = try JSONSerialization.jsonObject(with: Data(body.utf8))
            let events = (parsed as? [[String: Any]]) ?? [(parsed as? [String: Any]) ?? [:]]
            let action = request["action"] as? String ?? ""
            for id in events.compactMap({ $0["eventId"] as? String }) {
                lastAction[id] = action
                if action == "200" { ids.append(id) }
            }
        }
        return ids + lastAction.filter { $0.value == "timeout" }.map(\.key)
    }

    @Test("single mode: 503s and a timeout are retried, a 400 dead-letters its record, the rest arrive signed")
    func singleModeRecovers() async throws {
        let bed = try ServiceTestBed(count: 20)
        defer { bed.remove() }
        // 503, 503, then an answer slower than the timeout (2 s against 1 s: a loaded machine does not
        // make an ordinary answer that slow), then a 400 (permanent), then 200s.
        let receiver = try TestReceiver(plan: ["503", "503", "timeout", "400"], secret: Self.secret, directory: bed.directory)
        defer { receiver.stop() }
        let sink = """
            type: http
            url: \(receiver.url)
            timeout: 1s
            initial_backoff: 10ms
            signing_secret: \(Self.secret)
            """
        let pipeline = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: sink, http: nil))
        let (runner, _, registry) = try bed.service(pipeline)
        let summary = try await runner.run()

        let requests = try receiver.requests()
        #expect(requests.allSatisfy { $0["signature_ok"] as? Bool == true }, "X-Signet-Signature must verify with Python's hmac")
        #expect(requests.allSatisfy { $0["content_type"] as? String == "application/json" })
        let refused = try #require(requests.first { $0["action"] as? String == "400" })
        let refusedId = try #require(refused["event_id"] as? String)

        let delivered = try Self.deliveredEventIds(requests)
        let events = parsePrometheus(registry.emitToString()).filter { $0.key.hasPrefix("signet_events_total{") }.values.reduce(0, +)
        #expect(events > 2)
        // Every published event reached the receiver with a 2xx (at least once); the refused one
        // was dead-lettered, not published, and /metrics says so.
        #expect(
            Set(delivered).count == Int(events),
            "requests (n, action, event): \(requests.map { "\($0["n"] ?? "?") \($0["action"] ?? "?") \($0["event_id"] ?? "?")" })")
        #expect(!delivered.contains(refusedId))

        let deadLetters = try bed.lines("dead-letter.ndjson")
        #expect(deadLetters.count == 1)
        let firstLetter = try #require(deadLetters.first)
        let letter = try #require(JSONSerialization.jsonObject(with: Data(firstLetter.utf8)) as? [String: Any])
        #expect(letter["reason"] as? String == "http_rejected")
        #expect(letter["stage"] as? String == "sinks.events")
        #expect((letter["detail"] as? String)?.contains("HTTP 400") == true)
        #expect(summary.read == bed.notificationCount)
    }

    @Test("batch mode: JSON arrays; a 500 is retried and the whole batch arrives")
    func batchModeRetries() async throws {
        let bed = try ServiceTestBed(count: 30)
        defer { bed.remove() }
        let receiver = try TestReceiver(plan: ["500"], directory: bed.directory)
        defer { receiver.stop() }
        let sink = """
            type: http
            url: \(receiver.url)
            mode: batch
            max_batch: 7
            initial_backoff: 10ms
            """
        let pipeline = try bed.load(bed.pipelineYAML(input: bed.notifications, sink: sink, http: nil, batchSize: 64))
        let (runner, _, registry) = try bed.service(pipeline)
        _ = try await runner.run()

        let requests = try receiver.requests()
        let bodies = requests.compactMap { $0["body"] as? String }
        #expect(bodies.allSatisfy { $0.hasPrefix("[") && $0.hasSuffix("]") })
        let delivered = try Self.deliveredEventIds(requests)
        let events = parsePrometheus(registry.emitToString()).filter { $0.key.hasPrefix("signet_events_total{") }.values.reduce(0, +)
        #expect(Set(delivered).count == Int(events))
        #expect(requests.dropFirst().allSatisfy { ($0["body"] as? String).map { $0.split(separator: ",").count > 0 } == true })
        #expect(try bed.lines("dead-letter.ndjson").isEmpty)
    }

    @Test("a receiver that never answers 2xx fails the run without committing; nothing is dead-lettered")
    func unreachableReceiverFailsRun() async throws {
        let bed = try ServiceTestBed(count: 2)
        defer { bed.remove() }
        let receiver = try TestReceiver(plan: Array(repeating: "503", count: 50), directory: bed.directory)
        defer { receiver.stop() }
        let sink = "type: http\nurl: \(receiver.url)\nmax_retries: 2\ninitial_backoff: 5ms"
        var yaml = bed.pipelineYAML(input: bed.notifications, sink: sink, http: nil)
        yaml = yaml.replacingOccurrences(of: "sink_retry_timeout: 60s", with: "sink_retry_timeout: 300ms")
        let (runner, _, registry) = try bed.service(try bed.load(yaml))
        await #expect(throws: HTTPSinkError.self) { try await runner.run() }
        #expect(try bed.lines("dead-letter.ndjson").isEmpty)
        let samples = parsePrometheus(registry.emitToString())
        #expect((samples["signet_sink_failures_total{sink=\"events\"}"] ?? 0) >= 1)
        #expect((samples["signet_records_in_flight"] ?? 0) > 0)
    }

    @Test("HMAC-SHA256 matches RFC 4231 test case 2 and constant-time comparison")
    func hmacVector() {
        let tag = HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(HMACSHA256.hex(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(HMACSHA256.constantTimeEquals(Array("abc".utf8), Array("abc".utf8)))
        #expect(!HMACSHA256.constantTimeEquals(Array("abc".utf8), Array("abd".utf8)))
        #expect(!HMACSHA256.constantTimeEquals(Array("abc".utf8), Array("abcd".utf8)))
    }
}

import Foundation
import SignetCore
import SignetFixtures
import SignetHTTP
import SignetState
import SignetTestSupport
import Testing

/// The `forward` sink: the binary forwarding to two local receivers, one down for a while and
/// through a kill -9; and the sink alone for refusals, expiry and a full queue.
@Suite("forward sink")
struct ForwardSinkTests {
    typealias Inputs = SignedNotificationFolder


    @Test("two receivers, one down for a while and through a kill -9: the pipeline is not held, and each receiver gets every body exactly as received")
    func twoReceiversOneDown() async throws {
        let inputs = try Inputs(TestPKI(), count: 20)
        defer { inputs.directory.remove() }
        let live = try await RecordingHTTPReceiver()
        defer { live.stop() }
        let downPort = try freeLocalPort()
        let downURL = "http://127.0.0.1:\(downPort)/apple"
        let pipeline = try inputs.forwardPipeline(urls: [live.url, downURL])
        let expected = inputs.lines.sorted()

        // First run: half the input; the second receiver refuses connections.
        let first = try ChildProcess.signet(["run", "--pipeline", pipeline])
        defer { first.stop() }
        try first.write(inputs.lines.prefix(10).joined(separator: "\n") + "\n")
        #expect(await live.waitForBodies(10, timeout: .seconds(30)), "\(first.stderrText)")
        let passed = await first.waitUntil(timeout: .seconds(30)) { inputs.out.count == 10 }
        #expect(passed, "the pipeline went on with a receiver down: \(first.stderrText)")
        #expect(await first.waitUntil(timeout: .seconds(10)) { first.stderrText.contains("forward to \(downURL) failing") })
        // Killed while the second receiver's ten bodies wait in the queue.
        first.send(SIGKILL)
        _ = await first.exit(within: .seconds(10))

        // Second run, the receiver back: the rest of the input, and the queue drains.
        let back = try await RecordingHTTPReceiver(port: downPort)
        defer { back.stop() }
        let second = try ChildProcess.signet(["run", "--pipeline", pipeline])
        defer { second.stop() }
        try second.write(inputs.lines.suffix(10).joined(separator: "\n") + "\n")
        #expect(await live.waitForBodies(20, timeout: .seconds(60)), "\(second.stderrText)")
        #expect(await back.waitForBodies(20, timeout: .seconds(60)), "\(back.bodies.count) of 20; \(second.stderrText)")
        second.closeInput()
        #expect(await second.exit(within: .seconds(60)) == 0, "\(second.stderrText)")

        let (liveExact, backExact) = (live.bodies.sorted() == expected, back.bodies.sorted() == expected)
        #expect(liveExact, "\(live.bodies.count) bodies, each of the 20 once expected")
        #expect(backExact, "every body once, byte for byte, none lost to the kill: \(back.bodies.count) bodies")
        #expect(!FileManager.default.fileExists(atPath: inputs.directory.path("forward-dead.ndjson"))
            || ((try? WebhookHarness.lines(inputs.directory.path("forward-dead.ndjson"))) ?? []).isEmpty)
        let store = try SQLiteStateStore(path: inputs.directory.path("state.sqlite"))
        defer { try? store.close() }
        #expect(try store.forwardQueueStatus(target: downURL).pending == 0)
        #expect(try store.forwardQueueStatus(target: live.url).pending == 0)
    }

    @Test("to a receiver answering 503 (issue 53): every attempt series exists at 0 from the start, and the backlog gauges show the queue while it is retried")
    func gaugesFollowAnOutage() async throws {
        let inputs = try Inputs(TestPKI(), count: 5)
        defer { inputs.directory.remove() }
        let failing = try await FixedHTTPResponder(status: 503, body: Array("down".utf8))
        defer { failing.stop() }
        let target = "http://127.0.0.1:\(failing.port)/apple"
        let port = try freeLocalPort()
        let yaml = try String(contentsOfFile: try inputs.forwardPipeline(urls: [target]), encoding: .utf8)
            + "\nhttp: { address: \"127.0.0.1:\(port)\" }\n"
        let pipeline = try inputs.directory.write("gauges.yaml", yaml)
        let child = try ChildProcess.signet(["run", "--pipeline", pipeline])
        defer { child.stop() }
        /// The value of the first series of `name` whose labels contain every one of `labels`, as scraped.
        func scrape(_ name: String, _ labels: [String]) async -> Double? {
            let text = (try? await Curl.request("http://127.0.0.1:\(port)/metrics", method: "GET").body) ?? ""
            let line = text.split(separator: "\n").first { line in
                (line.hasPrefix(name + "{") || line.hasPrefix(name + " ")) && labels.allSatisfy { line.contains($0) }
            }
            return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        }
        func poll(_ condition: () async -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if await condition() { return true }
                try? await Task.sleep(for: .milliseconds(200))
            }
            return false
        }
        let receiver = "target=\"\(target)\""
        // Before any notification: Prometheus sees the first refusal as an increase from 0.
        #expect(await poll { await scrape("signet_forward_attempts_total", [receiver, #"result="refused""#]) == 0 }, "\(child.stderrText)")
        let (expired, started) = (await scrape("signet_forward_attempts_total", [receiver, #"result="expired""#]), await scrape("signet_process_start_time_seconds", []))
        #expect(expired == 0)
        // The pipeline's reason codes too: the first forged notification is an increase from 0.
        let forged = await scrape("signet_dead_letters_total", [#"reason="invalid_signature""#])
        #expect(forged == 0, "\(String(describing: forged))")
        #expect(started.map { $0 > 1_700_000_000 } == true, "\(String(describing: started))")

        try child.write(inputs.lines.joined(separator: "\n") + "\n")
        // Retried every 100-400 ms: the gauges must show the five bodies while that goes on.
        let shown = await poll {
            let pending = await scrape("signet_forward_pending", [receiver])
            let oldest = await scrape("signet_forward_oldest_pending_seconds", [receiver]) ?? 0
            let retries = await scrape("signet_forward_attempts_total", [receiver, #"result="retry""#]) ?? 0
            return pending == 5 && oldest > 0 && retries >= 10
        }
        let pendingShown = await scrape("signet_forward_pending", [receiver]) ?? -1
        #expect(shown, "pending \(pendingShown), \(child.stderrText)")
        // Still shown later in the outage (the oldest one ages).
        let first = await scrape("signet_forward_oldest_pending_seconds", [receiver]) ?? 0
        try await Task.sleep(for: .seconds(2.5))
        let (later, pendingLater) = (await scrape("signet_forward_oldest_pending_seconds", [receiver]) ?? 0, await scrape("signet_forward_pending", [receiver]))
        #expect(later > first + 1, "\(first) then \(later)")
        #expect(pendingLater == 5)
    }

    @Test("killed after the state commit, before the sinks acknowledged: the notification read again is a repeat dedupe drops, and is still forwarded")
    func crashAfterStateCommitStillForwards() async throws {
        let inputs = try Inputs(TestPKI(), count: 1)
        defer { inputs.directory.remove() }
        let receiver = try await RecordingHTTPReceiver()
        defer { receiver.stop() }
        let pipeline = try inputs.directory.write("stateful.yaml", """
            source: { type: stdin }
            stores: { default: { type: sqlite, path: \(inputs.directory.path("state.sqlite")) } }
            stages:
              - type: decode
              - { type: verify, roots: \(inputs.rootPath), environment: Sandbox, bundle_id: com.example.signet }
              - type: dedupe
              - type: transition
            sinks:
              events: { type: file, path: \(inputs.directory.path("out.ndjson")) }
              staging: { type: forward, urls: [\(receiver.url)], poll_interval: 100ms, dead_letter_path: \(inputs.directory.path("fd.ndjson")) }
            dead_letter: { type: file, path: \(inputs.directory.path("dead.ndjson")) }
            settings: { progress_interval: 0s }
            """)
        let line = Data((inputs.lines[0] + "\n").utf8)
        // Killed right after transition's commit, before any sink wrote.
        let killed = try await SignetProcess.output(
            ["run", "--pipeline", pipeline], stdin: line, environment: ["SIGNET_FAULT": "after_state_commit:1"])
        #expect(killed.exitCode != 0 && killed.stderr.contains("fault injection"), "\(killed.stderr)")
        #expect(receiver.bodies.isEmpty)

        let again = try await SignetProcess.output(["run", "--pipeline", pipeline], stdin: line)
        #expect(again.exitCode == 0, "\(again.stderr)")
        #expect(again.stderr.contains("1 dropped"), "read again, a repeat: \(again.stderr)")
        // Sent before the run ended: the sink drains its queue on close (drain_timeout).
        let forwarded = receiver.bodies == [inputs.lines[0]]
        #expect(forwarded, "\(receiver.bodies.count) bodies, the notification exactly once expected")
    }

    /// A sink over its own SQLite store, its dead-letter file in `directory`.
    static func sink(_ urls: [String], in directory: TemporaryDirectory, _ configure: (inout ForwardSink.Options) -> Void = { _ in })
        throws -> (ForwardSink, SQLiteStateStore)
    {
        let store = try SQLiteStateStore(path: directory.path("queue.sqlite"))
        var options = ForwardSink.Options()
        options.urls = urls
        options.initialBackoff = .milliseconds(50)
        options.maxBackoff = .milliseconds(100)
        options.pollInterval = .milliseconds(50)
        configure(&options)
        return (ForwardSink(options: options, store: { store }, deadLetterPath: directory.path("dead.ndjson")), store)
    }

    static func deadLetters(_ directory: TemporaryDirectory) -> [[String: Any]] {
        ((try? WebhookHarness.lines(directory.path("dead.ndjson"))) ?? []).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    @Test("a 4xx refusal is dead-lettered at once with the body, the status and the receiver; the queue empties")
    func refusedIsDeadLettered() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-forward-refused")
        defer { directory.remove() }
        let refusing = try await RecordingHTTPReceiver(status: 400)
        defer { refusing.stop() }
        let (sink, store) = try Self.sink([refusing.url], in: directory)
        try await sink.open()
        try await sink.write([OutputMessage(value: Array(#"{"signedPayload":"x.y.z"}"#.utf8))])
        let written = await pollUntil(timeout: .seconds(10)) { Self.deadLetters(directory).count == 1 }
        try await sink.close()
        #expect(written)
        let dead = try #require(Self.deadLetters(directory).first)
        #expect(dead["reason"] as? String == "forward_refused")
        #expect(dead["target"] as? String == refusing.url)
        #expect((dead["detail"] as? String)?.hasPrefix("HTTP 400") == true)
        #expect(dead["body"] as? String == #"{"signedPayload":"x.y.z"}"#)
        #expect(try store.forwardQueueStatus(target: refusing.url).pending == 0)
    }

    @Test("a receiver down past max_age: retried meanwhile, then dead-lettered as forward_expired after several attempts")
    func expiredIsDeadLettered() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-forward-expired")
        defer { directory.remove() }
        let down = "http://127.0.0.1:\(try freeLocalPort())/apple"
        // Three seconds of retries 50-100 ms apart: many attempts, even on a loaded machine.
        let (sink, store) = try Self.sink([down], in: directory) { $0.maxAge = .seconds(3) }
        try await sink.open()
        try await sink.write([OutputMessage(value: Array("{}".utf8))])
        let written = await pollUntil(timeout: .seconds(15)) { Self.deadLetters(directory).count == 1 }
        try await sink.close()
        #expect(written)
        let dead = try #require(Self.deadLetters(directory).first)
        #expect(dead["reason"] as? String == "forward_expired")
        #expect((dead["attempts"] as? Int ?? 0) >= 2, "retried with backoff before giving up: \(dead)")
        #expect(try store.forwardQueueStatus(target: down).pending == 0)
    }

    @Test("a receiver's queue at max_pending fails the write (the pipeline waits) and queues nothing of it")
    func fullQueueFailsTheWrite() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-forward-full")
        defer { directory.remove() }
        let down = "http://127.0.0.1:\(try freeLocalPort())/apple"
        let live = try await RecordingHTTPReceiver()
        defer { live.stop() }
        let (sink, store) = try Self.sink([live.url, down], in: directory) { $0.maxPending = 3 }
        try await sink.open()
        try await sink.write([OutputMessage(value: [0x31]), OutputMessage(value: [0x32])])
        await #expect(throws: ForwardSinkError.self) {
            try await sink.write([OutputMessage(value: [0x33]), OutputMessage(value: [0x34])])
        }
        #expect(await live.waitForBodies(2, timeout: .seconds(10)))
        try await sink.close()
        #expect(live.bodies.sorted() == ["1", "2"], "nothing of the refused write reached any receiver (sends run concurrently: any order)")
        #expect(try store.forwardQueueStatus(target: down).pending == 2)
    }
}

extension SignedNotificationFolder {
    /// stdin → decode → verify → the verified documents to a file, every notification forwarded to `urls`.
    func forwardPipeline(urls: [String]) throws -> String {
        try directory.write("pipeline.yaml", """
            source: { type: stdin }
            stores: { default: { type: sqlite, path: \(directory.path("state.sqlite")) } }
            stages:
              - type: decode
              - { type: verify, roots: \(rootPath), environment: Sandbox, bundle_id: com.example.signet }
            sinks:
              out: { type: file, path: \(directory.path("out.ndjson")) }
              staging:
                type: forward
                urls: [\(urls.joined(separator: ", "))]
                initial_backoff: 100ms
                max_backoff: 400ms
                poll_interval: 100ms
                dead_letter_path: \(directory.path("forward-dead.ndjson"))
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            settings: { progress_interval: 0s }
            """)
    }
}

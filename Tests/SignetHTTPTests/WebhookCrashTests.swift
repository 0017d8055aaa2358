import Foundation
import SignetTestSupport
import Testing

/// The `signet` binary running Pipelines/webhook.yaml, driven by Python's http.client:
/// kill -9 with requests in flight, restart, then SIGTERM with requests in flight.
@Suite("webhook pipeline: kill -9 and SIGTERM", .serialized, .timeLimit(.minutes(5)))
struct WebhookCrashTests {
    /// Phase 1: 16 clients post every notification; after 40 answers of 200 the server gets
    /// SIGKILL. Phase 2: restart, post every notification again (Apple's retries), then
    /// SIGTERM while a burst is in flight.
    static let driver = #"""
        import http.client, json, os, signal, socket, subprocess, sys, threading, time
        binary, pipeline, folder = sys.argv[1], sys.argv[2], sys.argv[3]
        bodies = open(os.path.join(folder, "notifications.ndjson")).read().splitlines()
        probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        env.update(SIGNET_HTTP_ADDRESS="127.0.0.1:%d" % port, SIGNET_ADMIN_ADDRESS="127.0.0.1:0", SIGNET_ROOT_CERTS=os.path.join(folder, "root.pem"),
                   SIGNET_BUNDLE_ID="com.example.signet", SIGNET_DATA_DIR=os.path.join(folder, "data"))

        def start(events):
            process = subprocess.Popen([binary, "run", "--pipeline", pipeline], env=env,
                                       stdout=open(os.path.join(folder, events), "wb"), stderr=open(os.path.join(folder, events + ".err"), "wb"))
            for _ in range(600):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close(); return process
                except OSError: time.sleep(0.05)
            raise SystemExit("server did not start")

        def post_all(indices, results, stop_after=None, on_stop=None, workers=16):
            lock = threading.Lock(); ok = [0]
            def work(chunk):
                for i in chunk:
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                        c.request("POST", "/notifications", bodies[i], {"Content-Type": "application/json"})
                        r = c.getresponse(); r.read()
                        status = r.status if r.status != 503 or r.getheader("Retry-After") else -503
                    except OSError:
                        status = 0
                    with lock:
                        results[i] = status
                        if status == 200:
                            ok[0] += 1
                            if stop_after is not None and ok[0] == stop_after: on_stop()
            threads = [threading.Thread(target=work, args=(indices[k::workers],)) for k in range(workers)]
            for t in threads: t.start()
            for t in threads: t.join()

        first = start("events1.ndjson")
        phase1 = {}
        post_all(list(range(len(bodies))), phase1, stop_after=40, on_stop=lambda: os.kill(first.pid, signal.SIGKILL))
        first.wait()

        second = start("events2.ndjson")
        phase2 = {}
        post_all(list(range(len(bodies))), phase2)
        phase3 = {}
        timer = threading.Timer(0.05, lambda: os.kill(second.pid, signal.SIGTERM)); timer.start()
        post_all(list(range(len(bodies))) * 3, phase3, workers=8)
        code = second.wait(timeout=60)
        print(json.dumps({"phase1": phase1, "phase2": phase2, "phase3": sorted(set(phase3.values())),
                          "killed": first.returncode, "exit": code}))
        """#

    @Test("every 200 survives kill -9; unanswered requests are safe to retry; SIGTERM drains and exits 0")
    func killAndDrain() async throws {
        guard Python.canImport(["http.client"]) else { return }
        let dir = try TemporaryDirectory(prefix: "signet-webhook-crash")
        defer { dir.remove() }
        let fixtures = try await SignetProcess.output(["fixtures", "--out", dir.path(""), "--count", "300"])
        try #require(fixtures.exitCode == 0, "\(fixtures.stderr)")
        let notifications = try String(contentsOfFile: dir.path("notifications.ndjson"), encoding: .utf8)

        // The clean run (stdin pipeline) says which event each notification produces.
        let clean = try await SignetProcess.output(
            ["run"], stdin: Data(notifications.utf8),
            environment: ["SIGNET_ROOT_CERTS": dir.path("root.pem"), "SIGNET_BUNDLE_ID": "com.example.signet", "SIGNET_DATA_DIR": dir.path("clean")])
        try #require(clean.exitCode == 0, "\(clean.stderr)")
        let cleanEvents = try clean.jsonLines()

        let pipeline = FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path
        let result = try await Blocking.python(Self.driver, [SignetProcess.executable.path, pipeline, dir.path("")])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data((result.output.split(separator: "\n").last ?? "").utf8)) as? [String: Any],
            "\(result.output)")
        let phase1 = try #require(report["phase1"] as? [String: Int])
        let phase2 = try #require(report["phase2"] as? [String: Int])
        let acked = Set(phase1.filter { $0.value == 200 }.map { Int($0.key) ?? -1 })
        #expect(acked.count >= 40)
        #expect(phase1.values.allSatisfy { [200, 0].contains($0) }, "phase 1 answers: \(Set(phase1.values))")
        #expect(phase2.count == 300 && phase2.values.allSatisfy { $0 == 200 }, "every retry is answered 200: \(Set(phase2.values))")
        #expect(report["exit"] as? Int == 0, "SIGTERM drains and exits 0: \(String(describing: report["exit"]))")
        let phase3 = try #require(report["phase3"] as? [Int])
        #expect(Set(phase3).isSubset(of: [200, 503, 0]), "during drain only 200, 503 with Retry-After, or refused: \(phase3)")

        let lines = notifications.split(separator: "\n").map(String.init)
        let uuidOf = { (index: Int) -> String? in WebhookCrashTests.notificationUUID(lines[index]) }
        let ackedUUIDs = Set(acked.compactMap(uuidOf))
        let events1 = try Self.events(dir.path("events1.ndjson"))
        let events2 = try Self.events(dir.path("events2.ndjson"))
        let ids1 = Set(events1.compactMap { $0["eventId"] as? String })
        var checked = 0
        for event in cleanEvents where ackedUUIDs.contains(Self.sourceUUID(event) ?? "") {
            checked += 1
            #expect(ids1.contains(event["eventId"] as? String ?? ""), "an acknowledged notification's event was written before the kill")
        }
        #expect(checked > 0 && ackedUUIDs.count == acked.count, "the check covers acknowledged notifications with events")
        #expect(!events2.contains { ackedUUIDs.contains(Self.sourceUUID($0) ?? "") }, "acknowledged notifications were in the state: retries emit nothing")
        let all = ids1.union(events2.compactMap { $0["eventId"] as? String })
        #expect(all == Set(cleanEvents.compactMap { $0["eventId"] as? String }), "after retries, every event of the clean run, none other")
    }

    static func events(_ path: String) throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func sourceUUID(_ event: [String: Any]) -> String? {
        event["notificationUUID"] as? String
    }

    /// The notificationUUID inside a `{"signedPayload": "..."}` line (the JWS payload, base64url).
    static func notificationUUID(_ line: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let jws = object["signedPayload"] as? String
        else { return nil }
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let payload = Data(base64Encoded: base64),
            let json = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return nil }
        return json["notificationUUID"] as? String
    }
}

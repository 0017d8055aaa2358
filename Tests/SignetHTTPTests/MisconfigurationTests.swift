import Foundation
import SignetTestSupport
import Testing

/// A deployment with a wrong bundle id, tried through the real binary and Pipelines/webhook.yaml:
/// every notification is answered 200 and dead-lettered (as Apple must see), and the
/// operator cannot miss it: the effective settings at start, one rate-limited warning with
/// the count, `/readyz` unready, and the metrics to alert on.
@Suite("a misconfiguration is loud (the binary)", .serialized, .timeLimit(.minutes(5)))
struct MisconfigurationTests {
    static let pipeline = FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path
    static let driver = #"""
        pipeline, retry = sys.argv[3], sys.argv[4]
        bodies = open(os.path.join(folder, "notifications.ndjson")).read().splitlines()[:8]
        port, admin = free_port(), free_port()
        process = start(pipeline, dict(
            SIGNET_HTTP_ADDRESS="127.0.0.1:%d" % port, SIGNET_ADMIN_ADDRESS="127.0.0.1:%d" % admin,
            SIGNET_ROOT_CERTS=os.path.join(folder, "root.pem"), SIGNET_BUNDLE_ID="com.example.wrong",
            SIGNET_DATA_DIR=os.path.join(folder, "data"), SIGNET_RETRY_MISCONFIGURED=retry), port)
        def get(path):
            c = http.client.HTTPConnection("127.0.0.1", admin, timeout=10); c.request("GET", path)
            r = c.getresponse(); return r.status, r.read().decode()
        # The webhook accepts before the runner reports running: ready within a few seconds.
        for _ in range(200):
            ready_before = get("/readyz")[0]
            if ready_before == 200: break
            time.sleep(0.05)
        report = {"ready_before": ready_before, "answers": [], "bodies": []}
        for body in bodies:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", "/notifications", body, {"Content-Type": "application/json"})
            r = c.getresponse(); report["bodies"].append(r.read().decode()); report["answers"].append(r.status)
        report["ready_after"] = get("/readyz")
        report["metrics"] = [l for l in get("/metrics")[1].splitlines() if l.startswith(("signet_misconfigured", "signet_configuration_rejections_total", "signet_build_info", "signet_notifications_verified_total"))]
        process.terminate(); report["exit"] = process.wait(timeout=60)
        print(json.dumps(report))
        """#

    @Test("wrong bundle id: 200s dead-lettered, settings logged at start, one warning with the count, /readyz unready, metrics")
    func wrongBundleId() async throws {
        let run = try await BinaryDriver.run(Self.driver, prefix: "signet-misconfigured", fixtures: 8, arguments: [Self.pipeline, "false"])
        defer { run.directory.remove() }
        let report = run.report, stderr = run.stderr
        #expect(report["ready_before"] as? Int == 200, "\(report)")
        let answers = try #require(report["answers"] as? [Int])
        #expect(answers.count == 8 && answers.allSatisfy { $0 == 200 }, "\(answers)")
        let bodies = (report["bodies"] as? [String]) ?? []
        #expect(bodies.allSatisfy { $0.contains(#""status":"dead_lettered""#) && $0.contains(#""reason":"bundle_id_mismatch""#) }, "\(bodies)")
        let readyAfter = try #require(report["ready_after"] as? [Any])
        #expect(readyAfter.first as? Int == 503, "\(readyAfter)")
        #expect((readyAfter.last as? String)?.contains("stages.verify: not ready") == true, "\(readyAfter)")
        let metrics = (report["metrics"] as? [String]) ?? []
        #expect(metrics.contains("signet_misconfigured 1.0") || metrics.contains("signet_misconfigured 1"), "\(metrics)")
        #expect(metrics.contains { $0.hasPrefix("signet_configuration_rejections_total{reason=\"bundle_id_mismatch\"} 8") }, "\(metrics)")
        #expect(metrics.contains { $0.hasPrefix("signet_build_info{version=") }, "\(metrics)")
        #expect(!metrics.contains { $0.hasPrefix("signet_notifications_verified_total") }, "nothing was accepted: \(metrics)")
        #expect(stderr.contains("verify: environment Sandbox, bundle id com.example.wrong"), "\(stderr)")
        let warnings = stderr.split(separator: "\n").filter { $0.contains("rejected for bundle_id_mismatch") }
        #expect(warnings.count == 1, "rate-limited to one line: \(warnings)")
        #expect(warnings.first?.contains("com.example.wrong") == true || warnings.first?.contains("com.example.signet") == true, "\(warnings)")
        #expect(report["exit"] as? Int == 0, "\(report)")
        let deadLetters = run.lines("data/dead-letter.ndjson")
        #expect(deadLetters.count == 8)
    }

    @Test("retry_misconfigured: the dead-lettered notification is answered 503 with Retry-After, so Apple sends it again")
    func retryMisconfigured() async throws {
        let run = try await BinaryDriver.run(Self.driver, prefix: "signet-misconfigured-retry", fixtures: 8, arguments: [Self.pipeline, "true"])
        defer { run.directory.remove() }
        let report = run.report
        let answers = try #require(report["answers"] as? [Int])
        #expect(answers.count == 8 && answers.allSatisfy { $0 == 503 }, "\(answers)")
        let bodies = (report["bodies"] as? [String]) ?? []
        #expect(bodies.allSatisfy { $0.contains(#""reason":"misconfigured""#) && $0.contains("bundle_id_mismatch") }, "\(bodies)")
        // Committed as dead letters all the same: nothing is lost when the setting is never fixed.
        let deadLetters = run.lines("data/dead-letter.ndjson")
        #expect(deadLetters.count == 8)
        #expect(report["exit"] as? Int == 0, "\(report)")
    }
}

import Foundation
import SignetCore
import SignetFixtures
import SignetTestSupport
import Testing

/// Apple's performance test, played by the fake App Store API against the `signet` binary's
/// retention endpoint (issue 56): `signet appstore retention url set` configures the Sandbox URL,
/// `performance-test --wait` starts the test, the fake sends Apple's signed requests at the
/// test's concurrency and judges each answer against the threshold, and the command prints the
/// verdict: PASS (exit 0) with Signet answering; FAIL (exit 1) once it is gone.
@Suite("retention: the fake App Store's performance test against the binary", .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct RetentionPerformanceTestEndToEndTests {
    typealias Bed = ReconcileCLIEndToEndTests.Bed
    static let appAppleId: Int64 = 1_234_567_890

    @Test("PASS while Signet answers every request within the threshold, FAIL when nothing answers", .ownThread)
    func verdicts() async throws {
        let bed = try await Bed.make()
        do {
            try await verdicts(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func verdicts(_ bed: Bed) async throws {
        let port = try freeLocalPort(), admin = try freeLocalPort()
        var environment = bed.environment
        environment["SIGNET_HTTP_ADDRESS"] = "127.0.0.1:\(port)"
        environment["SIGNET_ADMIN_ADDRESS"] = "127.0.0.1:\(admin)"
        environment["SIGNET_APP_APPLE_ID"] = String(Self.appAppleId)
        let webhook = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path, encoding: .utf8)
        let file = bed.directory.path("retention.yaml")
        try (webhook + """

            retention:
              path: /retention
              default_message: 0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11
              rules:
                - name: active
                  when: { state: [active] }
                  message: 11111111-2222-4333-8444-555555555555

            """).write(toFile: file, atomically: true, encoding: .utf8)
        let child = try ChildProcess.signet(["run", "--pipeline", file], environment: environment, stdin: false)
        defer { child.stop() }
        #expect(await child.waitUntil(timeout: .seconds(60)) { child.stderrText.contains("listening on") }, "\(child.stderrTail())")

        let configured = try await SignetProcess.output(
            ["appstore", "retention", "url", "set", "https://signet.example.com/retention"], environment: environment, timeout: 60)
        #expect(configured.exitCode == 0 && configured.stdoutText.contains("Sandbox realtime URL set"), "\(configured.stderr)")
        #expect(bed.fake.retention.realtimeURL == "https://signet.example.com/retention")

        // The configured https URL reaches Signet's plain listener: TLS termination is not under test.
        let signer = bed.signer
        bed.fake.retention.setPerformanceTestRunner(FakePerformanceTester.runner(
            local: { _ in "http://127.0.0.1:\(port)/retention" },
            body: { otid in
                let payload = RealtimeRequestFixtures.payload(
                    .init(originalTransactionId: otid, productId: "pro.monthly"), appAppleId: Self.appAppleId, environment: "Sandbox",
                    requestIdentifier: UUID(), signedDate: WallClock.milliseconds() - 1000)
                return Array(#"{"signedPayload":"\#(try signer.sign(payload: payload))"}"#.utf8)
            }))
        let passed = try await SignetProcess.output(
            ["appstore", "retention", "performance-test", "--original-transaction-id", "2000000000000001", "--wait", "--interval", "1s"],
            environment: environment, timeout: 120)
        #expect(passed.exitCode == 0, "\(passed.stderr)")
        let verdict = try #require(Self.lastJSON(passed.stdoutText), "\(passed.stdoutText)")
        #expect(verdict["result"] as? String == "PASS" && verdict["successRate"] as? Int == 100, "\(verdict)")
        #expect((verdict["responseTimes"] as? [String: Int])?["p99"].map { $0 < 700 } == true, "\(verdict)")
        #expect(verdict["target"] as? String == "https://signet.example.com/retention")
        #expect(passed.stderr.contains("100 requests, up to 10 at once"), "\(passed.stderr)")

        // Signet stopped: no answers, the test fails and the command says so.
        child.stop()
        let failed = try await SignetProcess.output(
            ["appstore", "retention", "performance-test", "--original-transaction-id", "2000000000000001", "--wait", "--interval", "1s"],
            environment: environment, timeout: 120)
        #expect(failed.exitCode == 1, "\(failed.stderr)")
        let failure = try #require(Self.lastJSON(failed.stdoutText), "\(failed.stdoutText)")
        #expect(failure["result"] as? String == "FAIL" && failure["successRate"] as? Int == 0, "\(failure)")
        // Connection refused: the HTTP client keeps trying to connect until the time is up.
        let failures = failure["failures"] as? [String: Int] ?? [:]
        #expect(failures.values.reduce(0, +) == 100 && Set(failures.keys).isSubset(of: ["TIMED_OUT", "NO_RESPONSE"]), "\(failure)")
    }

    /// The last pretty-printed JSON object on stdout (the command prints the start, then the result).
    static func lastJSON(_ text: String) -> [String: Any]? {
        guard let start = text.range(of: "\n{", options: .backwards)?.lowerBound ?? (text.hasPrefix("{") ? text.startIndex : nil) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(text[start...].utf8))) as? [String: Any]
    }
}

import Foundation
import SignetCore
import SignetTestSupport
import Testing

@Suite(
    "appstore_catch_up: a running pipeline recovers what Apple could not deliver, by itself (the binary, a fake App Store Server API)",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(10)))
struct CatchUpEndToEndTests {
    /// The embedded default pipeline with the catch-up stage first and a metrics listener.
    static func pipeline(interval: String, overlap: String) throws -> String {
        let stdin = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
        let stage = "stages:\n  - type: appstore_catch_up\n    interval: \(interval)\n    window: 3d\n    overlap: \(overlap)\n"
        return stdin.replacingOccurrences(of: "stages:\n", with: stage) + "\nhttp:\n  address: 127.0.0.1:0\n"
    }

    @Test("notifications Apple could not deliver are processed without anyone sending them; one that also arrived is dropped; the events equal an uninterrupted run's")
    func recoversFailedDeliveries() async throws {
        let bed = try await BackfillTestBed.make(count: 6, failed: [1, 4])
        do {
            try await recoversFailedDeliveries(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func recoversFailedDeliveries(_ bed: BackfillTestBed) async throws {
        let order = [1, 4, 0, 2, 5, 3]
        let reference = try await bed.signet(["run"], dataDir: bed.dataDir("reference"), stdin: order.map { bed.lines[$0] })
        #expect(reference.exitCode == 0, "\(reference.stderr)")
        let expected = Self.eventIds(reference.stdoutText)
        #expect(!expected.isEmpty)

        let file = bed.directory.path("catch-up.yaml")
        try Self.pipeline(interval: "1s", overlap: "1s").write(toFile: file, atomically: true, encoding: .utf8)
        var environment = bed.environment
        environment["SIGNET_DATA_DIR"] = bed.dataDir("service")
        let child = try ChildProcess.signet(["run", "--pipeline", file], environment: environment)
        defer { child.stop() }
        _ = await child.waitUntil(timeout: .seconds(60)) { listeningPort(in: child.stderrText) != nil || !child.isRunning }
        let port = try #require(listeningPort(in: child.stderrText), "no listener: \(child.stderrTail())")
        let metrics = "http://127.0.0.1:\(port)/metrics"

        // The two Apple could not deliver arrive with nobody sending them.
        let recovered = try await Self.waitForSample(metrics, "signet_catch_up_notifications_total{outcome=\"recovered\"}", 2)
        #expect(recovered, "stderr: \(child.stderrTail())")

        // The rest arrive as usual; then Apple's history lists one of them as failed too
        // (its own retry got through after all): the next sweep finds it, dedupe drops it.
        try child.write(order.dropFirst(2).map { bed.lines[$0] }.joined(separator: "\n") + "\n")
        let all = await child.waitUntil(timeout: .seconds(60)) { Self.eventIds(child.stdoutText).count >= expected.count }
        #expect(all, "stderr: \(child.stderrTail())")
        let late = try JSONSerialization.jsonObject(with: Data(bed.lines[3].utf8)) as? [String: Any]
        bed.fake.addNotifications([
            FakeAppStoreAPI.StoredNotification(
                signedPayload: try #require(late?["signedPayload"] as? String), sentDate: WallClock.milliseconds(), failed: true)
        ])
        let dropped = try await Self.waitForSample(metrics, "signet_catch_up_notifications_total{outcome=\"dropped\"}", 1)
        #expect(dropped, "stderr: \(child.stderrTail())")
        let samples = parsePrometheus(try await curl(metrics))
        #expect(samples["signet_catch_up_notifications_total{outcome=\"recovered\"}"] == 2)
        #expect(samples["signet_catch_up_notifications_total{outcome=\"rejected\"}"] == 0)
        #expect((samples["signet_catch_up_sweeps_total{result=\"success\"}"] ?? 0) >= 2)
        #expect((samples["signet_catch_up_last_success_timestamp_seconds"] ?? 0) > 0)

        child.closeInput()
        let status = await child.exit(within: .seconds(60))
        #expect(status == 0, "stderr: \(child.stderrTail())")
        #expect(Self.eventIds(child.stdoutText) == expected, "the catch-up run's events differ from the uninterrupted run's")
        #expect(child.stderrText.contains("2 recovered"), "no sweep summary: \(child.stderrTail())")

        // Every sweep asked for failures only; each later one started `overlap` before the previous began.
        let sweeps = bed.fake.requests(.notificationHistory).compactMap(\.jsonBody)
        #expect(sweeps.count >= 2)
        #expect(sweeps.allSatisfy { $0["onlyFailures"] as? Bool == true })
        let windows = sweeps.compactMap { body -> (Int64, Int64)? in
            guard let start = (body["startDate"] as? NSNumber)?.int64Value, let end = (body["endDate"] as? NSNumber)?.int64Value else { return nil }
            return (start, end)
        }
        #expect(windows.count == sweeps.count)
        if let first = windows.first { #expect(first.1 - first.0 == 3 * 86_400_000) }
        for (previous, next) in zip(windows, windows.dropFirst()) {
            #expect(next.0 == previous.1 - 1000, "a sweep did not start `overlap` before the previous one's end: \(windows)")
        }
    }

    @Test("a catch-up stage without the API key stops the start with exit 2 and names the variable; interval 0s needs no key")
    func missingCredentials() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-catch-up")
        defer { directory.remove() }
        let file = directory.path("catch-up.yaml")
        let environment = ["SIGNET_BUNDLE_ID": "com.example.signet", "SIGNET_DATA_DIR": directory.path("data")]
        try Self.pipeline(interval: "1h", overlap: "1h").write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try await SignetProcess.output(["run", "--pipeline", file], stdin: Data(), environment: environment, timeout: 60)
        #expect(refused.exitCode == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("SIGNET_APPSTORE_KEY_ID"), "\(refused.stderr)")

        try Self.pipeline(interval: "0s", overlap: "1h").write(toFile: file, atomically: true, encoding: .utf8)
        let off = try await SignetProcess.output(["run", "--pipeline", file], stdin: Data(), environment: environment, timeout: 60)
        #expect(off.exitCode == 0, "\(off.stderr)")
    }

    /// The `eventId`s of NDJSON events, in order.
    static func eventIds(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { BackfillTestBed.field("eventId", of: String($0)) }
    }

    /// Polls /metrics until `sample` reaches `value` (60 s at most).
    static func waitForSample(_ url: String, _ sample: String, _ value: Double) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (parsePrometheus(try await curl(url))[sample] ?? 0) >= value { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}

import Foundation
import SignetTestSupport
import Testing

@Suite("signet run with an http: section (the binary, scraped with curl)")
struct SignetRunServiceTests {
    @Test("metrics of every layer on /metrics while stdin stays open; JSON logs with a debug line per batch; exit 0 at EOF")
    func binaryServesMetrics() async throws {
        let bed = try ServiceTestBed(count: 50)
        defer { bed.remove() }
        var yaml = bed.pipelineYAML(input: bed.notifications, sink: "type: file\npath: \(bed.directory.path)/events.ndjson")
        yaml = yaml.replacingOccurrences(of: "  type: file\n  path: \(bed.notifications.path)", with: "  type: stdin")
        let file = bed.directory.appendingPathComponent("pipeline.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)

        let child = try ChildProcess.signet(["run", "--pipeline", file.path, "--log-format", "json", "--log-level", "debug"])
        defer { child.stop() }
        try child.write(Data(contentsOf: bed.notifications))

        // The first stderr lines are JSON; one says where the listener is.
        _ = await child.waitUntil(timeout: .seconds(60)) { listeningPort(in: child.stderrText) != nil }
        let port = listeningPort(in: child.stderrText)
        let listening = try #require(port)

        var samples: [String: Double] = [:]
        for _ in 0..<200 {
            samples = parsePrometheus(try await curl("http://127.0.0.1:\(listening)/metrics"))
            if samples["signet_records_read_total"] == 50, samples["signet_records_in_flight"] == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(samples["signet_records_read_total"] == 50)
        #expect((samples["signet_verifier_cache_hits_total{cache=\"chain\"}"] ?? 0) > 0)
        #expect((samples["signet_state_commit_duration_seconds_count{store=\"sqlite\"}"] ?? 0) > 0)
        // Every verified notification's age past Apple's signedDate, in buckets reaching weeks.
        let verified = samples.filter { $0.key.hasPrefix("signet_notifications_verified_total") }.values.reduce(0, +)
        #expect(verified > 0 && samples["signet_signed_date_lag_seconds_count"] == verified, "\(verified)")
        #expect(samples.keys.contains { $0.hasPrefix("signet_signed_date_lag_seconds_bucket{le=\"2592000") }, "\(samples.keys.filter { $0.contains("lag") })")
        let readiness = try await curl("http://127.0.0.1:\(listening)/readyz")
        #expect(readiness.contains("stores.default: ready"))

        child.closeInput()
        let status = await child.exit(within: .seconds(120))
        #expect(status == 0, "exit \(status.map(String.init) ?? "none within 120 s"); stderr ends: \(child.stderrText.suffix(3000))")
        let lines = child.stderrText.split(separator: "\n")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        // The final summary goes through the terminal, not the logger; every logger line is JSON.
        #expect(objects.count >= lines.count - 2, "non-JSON log lines: \(lines.filter { !$0.hasPrefix("{") })")
        let batches = objects.filter { $0["message"] as? String == "batch committed" }
        #expect(!batches.isEmpty)
        #expect(batches.allSatisfy { ($0["metadata"] as? [String: Any])?["records"] != nil && $0["level"] as? String == "debug" })
    }
}

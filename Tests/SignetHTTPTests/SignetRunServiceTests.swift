import Dispatch
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

        let process = Process()
        process.executableURL = SignetProcess.executable
        process.arguments = ["run", "--pipeline", file.path, "--log-format", "json", "--log-level", "debug"]
        let input = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        try input.fileHandleForWriting.write(contentsOf: Data(contentsOf: bed.notifications))

        // The first stderr lines are JSON; one says where the listener is.
        let stderr = errors.fileHandleForReading
        var port: Int?
        var collected = Data()
        while port == nil, let chunk = try stderr.read(upToCount: 1), !chunk.isEmpty {
            collected += chunk
            if chunk.first == 0x0A, let line = String(data: collected, encoding: .utf8)?.split(separator: "\n").last,
                line.contains("listening on"), let range = line.range(of: #":(\d+)""#, options: .regularExpression)
            {
                port = Int(line[range].dropFirst().dropLast())
            }
        }
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
        let readiness = try await curl("http://127.0.0.1:\(listening)/readyz")
        #expect(readiness.contains("stores.default: ready"))

        try input.fileHandleForWriting.close()
        let rest = stderr.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = String(decoding: collected + rest, as: UTF8.self).split(separator: "\n")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        // The final summary goes through the terminal, not the logger; every logger line is JSON.
        #expect(objects.count >= lines.count - 2, "non-JSON log lines: \(lines.filter { !$0.hasPrefix("{") })")
        let batches = objects.filter { $0["message"] as? String == "batch committed" }
        #expect(!batches.isEmpty)
        #expect(batches.allSatisfy { ($0["metadata"] as? [String: Any])?["records"] != nil && $0["level"] as? String == "debug" })
    }
}

/// GET with curl (an independent client), off the cooperative pool.
func curl(_ url: String) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["curl", "-sS", "--max-time", "10", url]
                let output = Pipe()
                process.standardOutput = output
                try process.run()
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else { throw TestFailure("curl \(url) failed") }
                return String(decoding: data, as: UTF8.self)
            })
        }
    }
}

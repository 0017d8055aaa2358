import Foundation
import Synchronization
import SignetTestSupport
import Testing

/// SIGTERM/SIGINT during `signet run` on a stdin that stays open: a graceful, prompt stop.
@Suite("signet run and signals", .timeLimit(.minutes(2)))
struct SignalTests {
    /// Collects a pipe's bytes as they arrive.
    final class Collector: Sendable {
        private let buffer = Mutex(Data())
        init(_ handle: FileHandle) {
            handle.readabilityHandler = { [self] handle in
                let chunk = handle.availableData
                if chunk.isEmpty {
                    handle.readabilityHandler = nil
                } else {
                    buffer.withLock { $0.append(chunk) }
                }
            }
        }
        var data: Data { buffer.withLock { $0 } }
        var lineCount: Int { buffer.withLock { $0.count(where: { $0 == 0x0A }) } }
    }

    /// Waits (polling) until `condition` holds or `seconds` pass; returns whether it held.
    static func wait(upTo seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func signalDuringSlowStdinStopsGracefully(_ signalNumber: Int32) throws {
        signal(SIGPIPE, SIG_IGN)
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-signal")
        defer { dir.remove() }
        let yaml = RunPipelineTests.pipeline(source: "  type: stdin", root: fixtures.root, deadLetter: dir.path("dead.ndjson"))
        let pipeline = try CLI.write(Data(yaml.utf8), to: dir, name: "pipeline.yaml")
        let summaryPath = dir.path("summary.json")

        let process = Process()
        process.executableURL = SignetProcess.executable
        process.arguments = ["run", "--pipeline", pipeline, "--summary-json", summaryPath]
        process.currentDirectoryURL = dir.url
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("SIGNET_") { environment[key] = nil }
        process.environment = environment
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        let stdout = Collector(output.fileHandleForReading)
        let stderr = Collector(errors.fileHandleForReading)
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            try? input.fileHandleForWriting.close()
        }

        // Feed some lines (and one reject), keep the pipe open, wait until they came out.
        let lines = try CLI.fileLines(fixtures.notifications).prefix(5)
        let forged = try CLI.fileLines(fixtures.forged)[0]
        try input.fileHandleForWriting.write(contentsOf: Data((lines.joined(separator: "\n") + "\n" + forged + "\n").utf8))
        let delivered = Self.wait(upTo: 30) { stdout.lineCount >= lines.count }
        try #require(delivered, "the fed lines reached stdout before the signal; stderr: \(String(decoding: stderr.data, as: UTF8.self))")
        #expect(process.isRunning, "still waiting for more input on the open pipe")

        kill(process.processIdentifier, signalNumber)
        let exited = Self.wait(upTo: 15) { !process.isRunning }
        #expect(exited, "signet run did not exit after signal \(signalNumber) with stdin still open")
        guard exited else { return }
        process.waitUntilExit()
        _ = Self.wait(upTo: 5) { String(decoding: stderr.data, as: UTF8.self).contains(" read, ") }
        let errorText = String(decoding: stderr.data, as: UTF8.self)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0, "stderr: \(errorText)")
        #expect(errorText.contains("\(lines.count + 1) read, \(lines.count) passed, 1 rejected"), "summary on stderr: \(errorText)")

        let documents = try CLI.jsonObjects(String(decoding: stdout.data, as: UTF8.self))
        #expect(documents.count == lines.count)
        let expectedUUIDs = try lines.map { line -> String? in
            let jws = try CLI.signedPayload(ofLine: line)
            let payload = try #require(CLI.base64URLDecode(jws.split(separator: ".")[1]))
            return (try JSONSerialization.jsonObject(with: payload) as? [String: Any])?["notificationUUID"] as? String
        }
        #expect(documents.map { $0["notificationUUID"] as? String } == expectedUUIDs)
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summaryPath))) as? [String: Any]
        #expect(summary?["read"] as? Int == lines.count + 1)
        #expect(summary?["passed"] as? Int == lines.count)
        #expect((summary?["rejectedByReason"] as? [String: Int]) == ["invalid_signature": 1])
        let dead = try CLI.jsonObjects(String(contentsOfFile: dir.path("dead.ndjson"), encoding: .utf8))
        #expect(dead.count == 1)
    }
}

import Foundation
import SignetTestSupport
import Testing

/// SIGTERM/SIGINT during `signet run` on a stdin that stays open: a graceful, prompt stop.
@Suite("signet run and signals", .timeLimit(.minutes(10)))
struct SignalTests {
    @Test(.ownThread, arguments: [SIGTERM, SIGINT])
    func signalDuringSlowStdinStopsGracefully(_ signalNumber: Int32) throws {
        signal(SIGPIPE, SIG_IGN)
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory(prefix: "signet-cli-signal")
        defer { dir.remove() }
        let yaml = RunPipelineTests.pipeline(source: "  type: stdin", root: fixtures.root, deadLetter: dir.path("dead.ndjson"))
        let pipeline = try CLI.write(Data(yaml.utf8), to: dir, name: "pipeline.yaml")
        let summaryPath = dir.path("summary.json")

        let child = try ChildProcess.signet(
            ["run", "--pipeline", pipeline, "--summary-json", summaryPath], currentDirectory: dir.url)
        defer { child.stop() }

        // Feed some lines (and one reject), keep the pipe open, wait until they came out.
        let lines = try CLI.fileLines(fixtures.notifications).prefix(5)
        let forged = try CLI.fileLines(fixtures.forged)[0]
        try child.write(lines.joined(separator: "\n") + "\n" + forged + "\n")
        let delivered = child.blockingWaitUntil(timeout: .seconds(30)) { child.stdoutLineCount >= lines.count }
        try #require(delivered, "the fed lines reached stdout before the signal; stderr: \(child.stderrText)")
        #expect(child.isRunning, "still waiting for more input on the open pipe")

        child.send(signalNumber)
        let status = child.blockingExit(within: .seconds(15))
        #expect(status != nil, "signet run did not exit after signal \(signalNumber) with stdin still open")
        guard status != nil else { return }
        let errorText = child.stderrText
        #expect(!child.killedBySignal)
        #expect(status == 0, "stderr: \(errorText)")
        #expect(errorText.contains("\(lines.count + 1) read, \(lines.count) passed, 1 rejected"), "summary on stderr: \(errorText)")

        let documents = try CLI.jsonObjects(child.stdoutText)
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

import Foundation
import SignetTestSupport
import Testing

/// `settings.shutdown_timeout` is a real bound: a drain that cannot finish (the sink's
/// receiver holds its answer) ends the process with exit 1 soon after the timeout, and
/// nothing the sink did not acknowledge is reported as processed.
@Suite("shutdown_timeout: a drain that cannot finish exits 1 (the binary)")
struct ShutdownTimeoutTests {
    @Test(.timeLimit(.minutes(10)))
    func heldSinkExitsOneAfterTheTimeout() async throws {
        let bed = try ServiceTestBed(count: 1)
        defer { bed.remove() }
        let receiver = try TestReceiver(plan: ["hold"], directory: bed.directory)
        defer { receiver.stop() }
        var yaml = bed.pipelineYAML(input: bed.notifications, sink: "type: http\nurl: \(receiver.url)\ntimeout: 60s", http: nil)
        yaml = yaml.replacingOccurrences(of: "  type: file\n  path: \(bed.notifications.path)", with: "  type: stdin")
        yaml = yaml.replacingOccurrences(of: "settings:\n", with: "settings:\n  shutdown_timeout: 1s\n")
        let file = bed.directory.appendingPathComponent("pipeline.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)

        let child = try ChildProcess.signet(["run", "--pipeline", file.path])
        defer { child.stop() }
        // stdin stays open: only the signal ends the run.
        try child.write(Data(contentsOf: bed.notifications))

        let holding = await child.waitUntil(timeout: .seconds(30)) { receiver.isHolding }
        try #require(holding, "the event never reached the receiver; stderr: \(child.stderrText)")
        let signalled = ContinuousClock.now
        child.send(SIGTERM)
        let status = await child.exit(within: .seconds(30))
        let elapsed = ContinuousClock.now - signalled
        let text = child.stderrText

        #expect(!child.killedBySignal)
        #expect(status == 1, "stderr: \(text)")
        // 1 s of drain plus the cancellation (slow on a loaded machine); far below the receiver's 60 s hold.
        #expect(elapsed < .seconds(40))
        #expect(text.contains("settings.shutdown_timeout (1s)"), "stderr names the setting: \(text)")
        #expect(try receiver.requests().isEmpty, "the held request was never answered")
    }
}

import Foundation
import SignetTestSupport
import Testing

/// `settings.shutdown_timeout` is a real bound: a drain that cannot finish (the sink's
/// receiver holds its answer) ends the process with exit 1 soon after the timeout, and
/// nothing the sink did not acknowledge is reported as processed.
@Suite("shutdown_timeout: a drain that cannot finish exits 1 (the binary)")
struct ShutdownTimeoutTests {
    @Test(.timeLimit(.minutes(2)))
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

        let process = Process()
        process.executableURL = SignetProcess.executable
        process.arguments = ["run", "--pipeline", file.path]
        let input = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // stdin stays open: only the signal ends the run.
        try input.fileHandleForWriting.write(contentsOf: Data(contentsOf: bed.notifications))

        for _ in 0..<600 where !receiver.isHolding { try await Task.sleep(for: .milliseconds(50)) }
        try #require(receiver.isHolding, "the event never reached the receiver")
        let signalled = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        let stderr = await Task.detached { errors.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - signalled
        let text = String(decoding: stderr, as: UTF8.self)

        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 1, "stderr: \(text)")
        // 1 s of drain plus the cancellation; far below the receiver's 60 s hold.
        #expect(elapsed < .seconds(15))
        #expect(text.contains("settings.shutdown_timeout (1s)"), "stderr names the setting: \(text)")
        #expect(try receiver.requests().isEmpty, "the held request was never answered")
    }
}

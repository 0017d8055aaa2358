import Foundation
import SignetCore
import SignetTestSupport
import Testing

/// `signet top` against a running `signet run` (the binary, its operators' listener), in a
/// real terminal: tmux, whose pane is read back.
@Suite("signet top: a live view of a running instance, in tmux", .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct TopCommandTests {
    static var tmux: URL? {
        ["/usr/bin/tmux", "/usr/local/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }.map(URL.init(fileURLWithPath:))
    }

    @Test("the pane shows the pipeline's rates and totals as records flow; --once prints one view; an unreachable listener is exit 1", .enabled(if: tmux != nil))
    func liveView() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-top")
        defer { directory.remove() }
        let fixtures = directory.path("fixtures")
        let made = try await SignetProcess.output(["fixtures", "--out", fixtures, "--count", "60", "--now"], timeout: 120)
        try #require(made.exitCode == 0, "\(made.stderr)")
        var environment = try FixturesEnvironment.read(fixtures)
        environment["SIGNET_DATA_DIR"] = directory.path("data")
        let pipeline = directory.path("top.yaml")
        try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
            .appending("\nhttp:\n  address: 127.0.0.1:0\n")
            .write(toFile: pipeline, atomically: true, encoding: .utf8)
        let signet = try ChildProcess.signet(["run", "--pipeline", pipeline], environment: environment)
        defer { signet.stop() }
        _ = await signet.waitUntil(timeout: .seconds(30)) { listeningPort(in: signet.stderrText) != nil || !signet.isRunning }
        let port = try #require(listeningPort(in: signet.stderrText), "no listener: \(signet.stderrTail())")
        let lines = try String(contentsOfFile: fixtures + "/notifications.ndjson", encoding: .utf8).split(separator: "\n")
        try signet.write(lines.prefix(30).joined(separator: "\n") + "\nnot json\n")

        let tmux = try #require(Self.tmux)
        let session = "signet-top-\(UUID().uuidString.prefix(8))"
        let top = "\(SignetProcess.executable.path) top --url http://127.0.0.1:\(port) --interval 500ms"
        // tmux's server outlives the command that starts it and keeps every descriptor it was
        // given: Foundation's Process sees its child as running while any holds the socket it
        // watches, and our pipes would never reach end of file. So bash closes all but 0-2 and
        // the server gets /dev/null for those.
        func tmuxCommand(_ arguments: [String]) throws -> SignetProcess.Result {
            let quoted = ([tmux.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            let output = arguments.first == "capture-pane" ? "" : " >/dev/null"
            let closeInherited = #"exec </dev/null 2>/dev/null; for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; "#
            return try SignetProcess.run(
                executable: URL(fileURLWithPath: "/bin/bash"), ["-c", closeInherited + "exec " + quoted + output], timeout: 20)
        }
        let started = try tmuxCommand(["new-session", "-d", "-s", session, "-x", "120", "-y", "50", top])
        try #require(started.exitCode == 0, "tmux did not start")
        defer { _ = try? tmuxCommand(["kill-session", "-t", session]) }
        func pane() -> String { (try? tmuxCommand(["capture-pane", "-p", "-t", session]).stdoutText) ?? "" }
        func readTotal(_ text: String) -> Int? {
            text.split(separator: "\n").first { $0.hasPrefix("  read") }?.split(separator: " ").last.flatMap { Int($0) }
        }
        var screen = ""
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            screen = pane()
            if let total = readTotal(screen), total >= 31 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(screen.contains("signet top") && screen.contains("PIPELINE") && screen.contains("events out"), "\(screen)")
        #expect(readTotal(screen) == 31, "\(screen)")
        #expect(screen.contains("REJECTED BY REASON") || screen.contains("rejected"), "\(screen)")
        // More records: the view follows (the pane redraws in place).
        try signet.write(lines.dropFirst(30).joined(separator: "\n") + "\n")
        var followed = false
        let later = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < later, !followed {
            followed = readTotal(pane()) == lines.count + 1
            if !followed { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(followed, "\(pane())")

        let once = try await SignetProcess.output(["top", "--url", "http://127.0.0.1:\(port)", "--interval", "200ms", "--once"], timeout: 60)
        #expect(once.exitCode == 0 && once.stdoutText.contains("PIPELINE") && !once.stdoutText.contains("\u{1B}[2J"), "\(once.stdoutText) \(once.stderr)")
        let closed = try freeLocalPort()
        let unreachable = try await SignetProcess.output(["top", "--url", "http://127.0.0.1:\(closed)", "--once"], timeout: 60)
        #expect(unreachable.exitCode == 1 && unreachable.stderr.contains("cannot read"), "\(unreachable.stderr)")
        signet.closeInput()
        #expect(await signet.exit(within: .seconds(60)) == 0, "\(signet.stderrTail())")
    }
}

import Foundation
import SignetTestSupport
import Testing

/// logrotate's `postrotate kill -HUP`: the file sinks move to new files and nothing is lost,
/// instead of SIGHUP ending the process (exit 129, no drain).
@Suite("SIGHUP reopens file sinks (the binary)", .serialized, .timeLimit(.minutes(5)))
struct LogRotationTests {
    @Test("events and dead letters written across a rotation: every line once, in the old or the new file; exit 0")
    func rotation() throws {
        let fixtures = try GeneratedFixtures.shared()
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let pipeline = dir.path("rotating.yaml")
        try """
            stores: { default: { type: sqlite, path: \(dir.path("signet.sqlite")) } }
            source: { type: stdin }
            stages:
              - type: decode
              - { type: verify, roots: \(fixtures.root), environment: Sandbox, bundle_id: com.example.signet }
              - type: dedupe
              - type: transition
              - { type: fanout, default_sinks: [events] }
            sinks: { events: { type: file, path: \(dir.path("events.ndjson")) } }
            dead_letter: { type: file, path: \(dir.path("dead.ndjson")) }
            settings: { progress_interval: 0s }
            """.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let lines = try String(contentsOfFile: fixtures.notifications, encoding: .utf8).split(separator: "\n")
        let forged = try String(contentsOfFile: fixtures.forged, encoding: .utf8).split(separator: "\n")
        let half = lines.count / 2
        try (lines[..<half] + forged.prefix(3)).joined(separator: "\n").appending("\n").write(toFile: dir.path("first.ndjson"), atomically: true, encoding: .utf8)
        try (lines[half...] + forged.dropFirst(3).prefix(3)).joined(separator: "\n").appending("\n").write(toFile: dir.path("second.ndjson"), atomically: true, encoding: .utf8)
        let script = #"""
            cd "$DIR"
            mkfifo in.fifo
            "$SIGNET" run --pipeline rotating.yaml < in.fifo 2> signet.err &
            pid=$!
            exec 3> in.fifo
            cat first.ndjson >&3
            for _ in $(seq 1 600); do [ "$(wc -l < events.ndjson 2>/dev/null || echo 0)" -gt 0 ] && [ -s dead.ndjson ] && break; sleep 0.05; done
            sleep 1
            mv events.ndjson events.ndjson.1; mv dead.ndjson dead.ndjson.1
            kill -HUP $pid
            for _ in $(seq 1 200); do grep -q "SIGHUP: reopened" signet.err && break; sleep 0.05; done
            cat second.ndjson >&3
            exec 3>&-
            wait $pid; echo "exit=$?"
            """#
        let result = try SignetProcess.shell(
            script, environment: ["DIR": dir.path(""), "SIGNET": SignetProcess.executable.path], timeout: 120)
        let stderr = (try? String(contentsOfFile: dir.path("signet.err"), encoding: .utf8)) ?? ""
        #expect(result.stdoutText.contains("exit=0"), "\(result.stdoutText)\n\(stderr)")
        #expect(stderr.contains("SIGHUP: reopened events, dead_letter"), "\(stderr)")
        func fileLines(_ name: String) -> [Substring] {
            ((try? String(contentsOfFile: dir.path(name), encoding: .utf8)) ?? "").split(separator: "\n")
        }
        let before = fileLines("events.ndjson.1"), after = fileLines("events.ndjson")
        #expect(!before.isEmpty && !after.isEmpty, "events on both sides of the rotation")
        // The default pipeline without rotation, on the same input, says which events there are.
        let input = (lines + forged.prefix(6)).joined(separator: "\n") + "\n"
        let reference = try SignetProcess.run(
            ["run"], stdin: Data(input.utf8),
            environment: ["SIGNET_ROOT_CERTS": fixtures.root, "SIGNET_BUNDLE_ID": "com.example.signet", "SIGNET_DATA_DIR": dir.path("reference")])
        try #require(reference.exitCode == 0, "\(reference.stderr)")
        let all: [String] = (before + after).map(String.init)
        let expected: [String] = reference.lines
        #expect(Set(all).count == all.count, "no event twice")
        #expect(Set(all) == Set(expected), "every event, once: \(all.count) written, \(expected.count) expected")
        let deadBefore = fileLines("dead.ndjson.1"), deadAfter = fileLines("dead.ndjson")
        #expect(deadBefore.count == 3 && deadAfter.count == 3, "dead letters: \(deadBefore.count) + \(deadAfter.count)")
    }
}

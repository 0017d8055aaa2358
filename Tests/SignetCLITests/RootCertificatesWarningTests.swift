import Foundation
import SignetTestSupport
import Testing

/// Issue 53, item 14: a verify stage without `roots:` trusts only Apple's root, whatever
/// `$SIGNET_ROOT_CERTS` says. The behaviour stays; an operator who set the variable (as
/// `source fixtures.env` does) for a pipeline file that never reads it is told so at start.
@Suite("SIGNET_ROOT_CERTS set but not read by a verify stage: said loudly at start")
struct RootCertificatesWarningTests {
    static func pipeline(roots: String?, deadLetters: String) -> String {
        """
        source: { type: stdin }
        stages:
          - type: decode
          - { type: verify, environment: Sandbox, bundle_id: com.example.signet\(roots.map { ", roots: \"\($0)\"" } ?? "") }
        sinks:
          out: { type: stdout }
        dead_letter: { type: file, path: \(deadLetters) }
        settings: { progress_interval: 0s }
        """
    }

    @Test(.ownThread) func warnsOnlyWhenNoVerifyStageReadsTheVariable() throws {
        let fixtures = try GeneratedFixtures.shared()
        let directory = try TemporaryDirectory(prefix: "signet-roots-warning")
        defer { directory.remove() }
        let line = Data((try #require(try CLI.fileLines(fixtures.notifications).first) + "\n").utf8)
        let environment = ["SIGNET_ROOT_CERTS": fixtures.root]

        let written = try directory.write("old.yaml", Self.pipeline(roots: nil, deadLetters: directory.path("dead-old.ndjson")))
        let silent = try CLI.run(["run", "--pipeline", written], stdin: line, environment: environment)
        #expect(silent.stderr.contains("SIGNET_ROOT_CERTS is set") && silent.stderr.contains("no verify stage"), "\(silent.stderr)")
        #expect(silent.stderr.contains("roots: ${SIGNET_ROOT_CERTS:apple}"), "the message says what to write")

        let reading = try directory.write("new.yaml", Self.pipeline(roots: "${SIGNET_ROOT_CERTS:apple}", deadLetters: directory.path("dead-new.ndjson")))
        let read = try CLI.run(["run", "--pipeline", reading], stdin: line, environment: environment)
        #expect(read.exitCode == 0 && !read.stderr.contains("SIGNET_ROOT_CERTS is set"), "\(read.stderr)")

        // Unset: nothing to say.
        let unset = try CLI.run(["run", "--pipeline", written], stdin: line)
        #expect(!unset.stderr.contains("SIGNET_ROOT_CERTS is set"), "\(unset.stderr)")
    }
}

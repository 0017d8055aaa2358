import Foundation
import SignetTestSupport
import Testing

/// `signet test`: the shipped pipelines pass their own tests (this is how CI runs them),
/// a wrong expectation fails with a readable difference, and nothing is written.
@Suite("signet test")
struct PipelineTestCommandTests {
    static let pipelines = FixturePaths.packageRoot.appendingPathComponent("Pipelines")

    @Test(.ownThread) func shippedPipelinesPassTheirOwnTests() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.pipelines.path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { Self.pipelines.appendingPathComponent($0).path }
        #expect(files.count >= 3)
        let workspace = try TemporaryDirectory(prefix: "signet-cli-test")
        defer { workspace.remove() }
        let result = try CLI.run(["test"] + files, currentDirectory: workspace.url, timeout: 120)
        #expect(result.exitCode == 0, "\(CLI.describe(result))")
        #expect(result.stdoutText.contains(" passed, 0 failed"), "\(result.stdoutText)")
        #expect(!result.stdoutText.contains("FAIL"))
        // Every shipped pipeline has tests, and they ran.
        for file in files {
            #expect(result.stdoutText.contains("tests of \(file)"), "no tests ran for \(file)")
        }
        // In-memory stores and capturing sinks: the run left nothing behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: workspace.url.path).isEmpty)
    }

    @Test(.ownThread) func aWrongExpectationFailsWithADiff() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-test")
        defer { dir.remove() }
        let fixtures = Self.pipelines.appendingPathComponent("tests/fixtures").path
        let file = try CLI.write(Data("""
            pipeline: \(Self.pipelines.appendingPathComponent("stdin.yaml").path)
            environment:
              SIGNET_ROOT_CERTS: \(fixtures)/root.pem
              SIGNET_BUNDLE_ID: com.example.signet
            tests:
              - name: passes
                input_files: \(fixtures)/notifications.ndjson
                expect: { counts: { stdout: 6 }, allow_more: true }
              - name: expects a revoke
                input_files: \(fixtures)/notifications.ndjson
                expect:
                  outputs:
                    - fields: { type: revoked, subtype: INITIAL_BUY }
                  dead_letters:
                    - reason: invalid_signature
                  dropped: { duplicate: 1 }

            """.utf8), to: dir, name: "wrong.test.yaml")
        let result = try CLI.run(["test", file], currentDirectory: dir.url, timeout: 120)
        #expect(result.exitCode == 1, "\(CLI.describe(result))")
        let lines = result.lines
        #expect(lines.contains("  PASS  passes"))
        #expect(lines.contains("  FAIL  expects a revoke"))
        #expect(lines.contains("        stdout #1: type: expected \"revoked\", got \"granted\""), "\(result.stdoutText)")
        #expect(lines.contains { $0.hasPrefix("        stdout #2: unexpected message {") })
        #expect(lines.contains("        dead letter #1: expected reason invalid_signature, but only 0 records were rejected"))
        #expect(lines.contains("        dropped: expected duplicate: 1, got none"))
        #expect(lines.last == "1 passed, 1 failed")
    }

    @Test(.ownThread) func aBrokenTestFileOrAPipelineWithoutTestsIsAConfigurationError() throws {
        let dir = try TemporaryDirectory(prefix: "signet-cli-test")
        defer { dir.remove() }
        let broken = try CLI.write(Data("tests:\n  - name: x\n    inputs: a.ndjson\n    expect: {}\n".utf8), to: dir, name: "p.test.yaml")
        let result = try CLI.run(["test", broken])
        #expect(result.exitCode == 2, "\(CLI.describe(result))")
        #expect(result.stdoutText.contains("\(broken):3:5: error: unknown key 'inputs' in 'tests[0]'"), "\(result.stdoutText)")
        let lonely = try CLI.write(Data("source: {type: stdin}\n".utf8), to: dir, name: "lonely.yaml")
        let missing = try CLI.run(["test", lonely])
        #expect(missing.exitCode == 2)
        #expect(missing.stdoutText.contains("\(lonely): error: no tests"))
    }
}

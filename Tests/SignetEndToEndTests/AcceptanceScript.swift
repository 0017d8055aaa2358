import Foundation
import SignetTestSupport
import Testing

/// A script of Tests/Acceptance, written from the docs alone, run against the built `signet`:
/// it prints one `ok -` / `FAIL -` line per check and exits 0 only when all pass.
enum AcceptanceScript {
    /// Runs `Tests/Acceptance/<name>` with the binary's path; records an issue with its output
    /// unless it exits 0.
    static func expectPasses(_ name: String, timeout: Double = 240, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let script = FixturePaths.packageRoot.appendingPathComponent("Tests/Acceptance/\(name)").path
        let result = try await offPool {
            try SignetProcess.run(executable: ChildProcess.env, ["python3", script, SignetProcess.executable.path], timeout: timeout)
        }
        #expect(
            result.exitCode == 0,
            "python3 \(script) \(SignetProcess.executable.path) exited \(result.exitCode):\n\(result.stdoutText)\n\(result.stderr)",
            sourceLocation: sourceLocation)
    }
}

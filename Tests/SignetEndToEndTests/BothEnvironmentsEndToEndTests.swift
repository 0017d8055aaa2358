import Foundation
import SignetTestSupport
import Testing

/// TestFlight and App Review purchases are Sandbox and reach the Production backend: the
/// default pipeline with `SIGNET_ENVIRONMENT=Production,Sandbox` takes both into one store.
@Suite("Both environments in one pipeline (the binary)", .tags(.endToEnd), .timeLimit(.minutes(5)))
struct BothEnvironmentsEndToEndTests {
    @Test("Production and Sandbox notifications: both verified, one store, each purchase under its environment", .ownThread)
    func productionAndSandboxInOneStore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("signet-both-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixtures = folder.appendingPathComponent("fixtures").path
        // One test PKI (the second call reuses DIR/pki), samples of each environment.
        let sandbox = try SignetProcess.run(["fixtures", "--out", fixtures, "--count", "12", "--seed", "1", "--now"])
        #expect(sandbox.exitCode == 0, "\(sandbox.stderr)")
        let production = try SignetProcess.run([
            "fixtures", "--out", fixtures, "--count", "12", "--seed", "2", "--now", "--environment", "Production",
            "--app-apple-id", "1234567890", "--stdout",
        ])
        #expect(production.exitCode == 0, "\(production.stderr)")
        let sandboxLines = try String(contentsOfFile: fixtures + "/notifications.ndjson", encoding: .utf8)
        let input = Data((sandboxLines + production.stdoutText).utf8)

        var environment = [
            "SIGNET_ROOT_CERTS": fixtures + "/root.pem", "SIGNET_BUNDLE_ID": "com.example.signet",
            "SIGNET_APP_APPLE_ID": "1234567890", "SIGNET_DATA_DIR": folder.appendingPathComponent("data").path,
        ]
        // Production only: the Sandbox ones are refused, as before.
        environment["SIGNET_ENVIRONMENT"] = "Production"
        let productionOnly = try SignetProcess.run(["run"], stdin: input, environment: environment)
        // (By Apple's order of claims, the missing appAppleId of a Sandbox notification is named first.)
        #expect(productionOnly.stderr.contains("24 read, 12 passed, 12 rejected"), "\(productionOnly.stderr.suffix(600))")

        environment["SIGNET_ENVIRONMENT"] = "Production,Sandbox"
        environment["SIGNET_DATA_DIR"] = folder.appendingPathComponent("both").path
        let both = try SignetProcess.run(["run"], stdin: input, environment: environment)
        #expect(both.exitCode == 0, "\(both.stderr.suffix(600))")
        #expect(both.stderr.contains("24 read, 24 passed, 0 rejected"), "\(both.stderr.suffix(600))")
        #expect(both.stderr.contains("environment Production and Sandbox"), "the start log names both")
        let events = try both.jsonLines()
        let environments = Set(events.compactMap { $0["environment"] as? String })
        #expect(environments == ["Production", "Sandbox"])

        // Each purchase answers under its own environment; --environment keeps one.
        let database = folder.appendingPathComponent("both/signet.sqlite").path
        for wanted in ["Production", "Sandbox"] {
            let event = try #require(events.first { $0["environment"] as? String == wanted && $0["appAccountToken"] is String })
            let token = try #require(event["appAccountToken"] as? String)
            let answer = try SignetProcess.run(["entitlements", "--database", database, "--app-account-token", token, "--environment", wanted])
            let rows = try #require(try JSONSerialization.jsonObject(with: answer.stdout) as? [[String: Any]])
            #expect(!rows.isEmpty && rows.allSatisfy { $0["environment"] as? String == wanted }, "\(answer.stdoutText)")
            let other = wanted == "Production" ? "Sandbox" : "Production"
            let none = try SignetProcess.run(["entitlements", "--database", database, "--app-account-token", token, "--environment", other])
            #expect(none.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[\n\n]" || none.stdoutText.contains("[]"), "\(none.stdoutText)")
        }
    }
}

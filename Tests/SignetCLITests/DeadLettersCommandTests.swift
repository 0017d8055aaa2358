import Foundation
import SignetTestSupport
import Testing

/// The day-one mistake undone with Signet's own tools: a wrong bundle id dead-letters every
/// notification; once it is fixed, `signet dead-letters replay` processes each of them once.
@Suite("signet dead-letters: stats by reason, replay after the fix (here, and through a running webhook)", .tags(.endToEnd), .serialized)
struct DeadLettersCommandTests {
    static let wrongBundle = "com.wrong.app"

    func environment(_ fixtures: GeneratedFixtures, data: String, bundleId: String = GeneratedFixtures.bundleId) -> [String: String] {
        ["SIGNET_ROOT_CERTS": fixtures.root, "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_BUNDLE_ID": bundleId, "SIGNET_DATA_DIR": data]
    }

    /// The ids of the events inputs caused (not the expiry sweep's, which depend on the hour).
    func inputEventIds(_ text: String) throws -> [String] {
        try CLI.jsonObjects(text).filter { $0["source"] as? String != "clock" }.compactMap { $0["eventId"] as? String }.sorted()
    }

    @Test("stats counts by reason; replay after fixing the bundle id gives exactly a clean run's events, once", .ownThread)
    func statsAndReplayHere() throws {
        let fixtures = try GeneratedFixtures.shared()
        let directory = try TemporaryDirectory(prefix: "signet-dead-letters")
        defer { directory.remove() }
        let notifications = try Data(contentsOf: URL(fileURLWithPath: fixtures.notifications))
        let forged = try CLI.fileLines(fixtures.forged)
        // Forgeries refused whatever the bundle id: a bad signature, a chain to no root, alg none, broken JSON.
        let stillBad = [forged[0], forged[1], forged[3], forged[6]]
        let input = notifications + Data((stillBad.joined(separator: "\n") + "\n").utf8)

        let reference = try CLI.run(["run"], stdin: notifications, environment: environment(fixtures, data: directory.path("reference")))
        #expect(reference.exitCode == 0, CLI.describe(reference))
        let expected = try inputEventIds(reference.stdoutText)
        #expect(expected.count >= GeneratedFixtures.count / 2)

        let live = environment(fixtures, data: directory.path("live"))
        let mistaken = try CLI.run(["run"], stdin: input, environment: environment(fixtures, data: directory.path("live"), bundleId: Self.wrongBundle))
        #expect(mistaken.exitCode == 0, CLI.describe(mistaken))
        #expect(mistaken.stdoutText.isEmpty, "nothing verifies for another app's bundle id")
        let deadLetters = directory.path("live/dead-letter.ndjson")

        let stats = try CLI.run(["dead-letters", "stats", "--json", deadLetters])
        #expect(stats.exitCode == 0, CLI.describe(stats))
        let statistics = try #require(try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
        #expect(statistics["records"] as? Int == GeneratedFixtures.count + stillBad.count)
        let reasons = try #require(statistics["reasons"] as? [[String: Any]])
        let byReason = Dictionary(uniqueKeysWithValues: reasons.compactMap { entry in (entry["reason"] as? String).map { ($0, entry["count"] as? Int ?? -1) } })
        #expect(byReason == [
            "bundle_id_mismatch": GeneratedFixtures.count, "invalid_signature": 1, "invalid_certificate_chain": 1,
            "unsupported_algorithm": 1, "malformed_json": 1,
        ])
        #expect(reasons.first?["reason"] as? String == "bundle_id_mismatch", "most frequent first")
        let table = try CLI.run(["dead-letters", "stats", deadLetters])
        #expect(table.stdoutText.hasPrefix("\(GeneratedFixtures.count + stillBad.count) dead letters, "), CLI.describe(table))
        #expect(table.stdoutText.contains("bundle_id_mismatch"))

        // A line that is not a dead letter: named, exit 1.
        let mixed = directory.path("mixed.ndjson")
        try (String(contentsOfFile: deadLetters, encoding: .utf8) + "{\"not\":\"a dead letter\"}\n").write(toFile: mixed, atomically: true, encoding: .utf8)
        let bad = try CLI.run(["dead-letters", "stats", mixed])
        #expect(bad.exitCode == 1)
        #expect(bad.stderr.contains("line \(GeneratedFixtures.count + stillBad.count + 1): not a dead-letter record"), CLI.describe(bad))

        // Fixed: the bundle id's dead letters replay into exactly the events a clean run gave.
        let replay = try CLI.run(["dead-letters", "replay", deadLetters, "--reason", "bundle_id_mismatch"], environment: live)
        #expect(replay.exitCode == 0, CLI.describe(replay))
        #expect(try inputEventIds(replay.stdoutText) == expected)
        #expect(replay.stderr.contains("replayed \(GeneratedFixtures.count) inputs: \(GeneratedFixtures.count) processed"), CLI.describe(replay))

        // Twice changes nothing.
        let again = try CLI.run(["dead-letters", "replay", deadLetters, "--reason", "bundle_id_mismatch"], environment: live)
        #expect(again.exitCode == 0, CLI.describe(again))
        #expect(try inputEventIds(again.stdoutText).isEmpty)
        #expect(again.stderr.contains("0 processed (0 events), \(GeneratedFixtures.count) processed before"), CLI.describe(again))

        // Everything: the forgeries are refused again, by reason, and dead-lettered again with the same ids; exit 1.
        let before = try CLI.fileLines(deadLetters)
        let all = try CLI.run(["dead-letters", "replay", deadLetters], environment: live)
        #expect(all.exitCode == 1, CLI.describe(all))
        #expect(try inputEventIds(all.stdoutText).isEmpty)
        #expect(all.stderr.contains("4 refused again ("), CLI.describe(all))
        for reason in ["invalid_signature 1", "invalid_certificate_chain 1", "unsupported_algorithm 1", "malformed_json 1"] {
            #expect(all.stderr.contains(reason), "\(reason): \(all.stderr)")
        }
        let after = try CLI.fileLines(deadLetters)
        #expect(after.count == before.count + stillBad.count)
        let ids = { (lines: ArraySlice<String>) in try Set(CLI.jsonObjects(lines.joined(separator: "\n")).compactMap { $0["id"] as? String }) }
        #expect(try ids(after[before.count...]).isSubset(of: ids(before[...])), "a refused input keeps its dead-letter id")
    }

    @Test("replay into a running webhook pipeline: processed once, then answered as duplicates", .ownThread)
    func replayThroughTheWebhook() async throws {
        let fixtures = try GeneratedFixtures.shared()
        let directory = try TemporaryDirectory(prefix: "signet-dead-letters-webhook")
        defer { directory.remove() }
        let lines = try CLI.fileLines(fixtures.notifications).prefix(10)
        let mistaken = try CLI.run(
            ["run"], stdin: Data((lines.joined(separator: "\n") + "\n").utf8),
            environment: environment(fixtures, data: directory.path("mistake"), bundleId: Self.wrongBundle))
        #expect(mistaken.exitCode == 0, CLI.describe(mistaken))
        let deadLetters = directory.path("mistake/dead-letter.ndjson")

        var service = environment(fixtures, data: directory.path("service"))
        let port = try freeLocalPort()
        service["SIGNET_HTTP_ADDRESS"] = "127.0.0.1:\(port)"
        service["SIGNET_ADMIN_ADDRESS"] = "127.0.0.1:\(try freeLocalPort())"
        let webhook = try ChildProcess.signet(
            ["run", "--pipeline", FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path],
            environment: service, stdin: false)
        defer { webhook.stop() }
        #expect(await webhook.waitUntil(timeout: .seconds(60)) { webhook.stderrText.contains("webhook listening") }, "\(webhook.stderrTail())")

        let url = "http://127.0.0.1:\(port)/notifications"
        let replay = try await SignetProcess.output(["dead-letters", "replay", deadLetters, "--webhook", url])
        #expect(replay.exitCode == 0, CLI.describe(replay))
        #expect(replay.stderr.contains("replayed 10 inputs: 10 processed, 0 processed before"), CLI.describe(replay))
        let again = try await SignetProcess.output(["dead-letters", "replay", deadLetters, "--webhook", url])
        #expect(again.exitCode == 0, CLI.describe(again))
        #expect(again.stderr.contains("replayed 10 inputs: 0 processed, 10 processed before"), CLI.describe(again))

        webhook.send(SIGTERM)
        #expect(await webhook.exit(within: .seconds(30)) == 0, "\(webhook.stderrTail())")
        let reference = try CLI.run(
            ["run"], stdin: Data((lines.joined(separator: "\n") + "\n").utf8), environment: environment(fixtures, data: directory.path("reference")))
        #expect(try inputEventIds(webhook.stdoutText) == inputEventIds(reference.stdoutText))

        // No webhook there: each input is counted without an answer after the first, exit 1.
        let nobody = try await SignetProcess.output(["dead-letters", "replay", deadLetters, "--webhook", "http://127.0.0.1:\(try freeLocalPort())/n", "--patience", "2"])
        #expect(nobody.exitCode == 1, CLI.describe(nobody))
        #expect(nobody.stderr.contains("10 without an answer (not tried after that 9, no connection 1"), CLI.describe(nobody))
    }
}

import Foundation
import SignetCore
import SignetTestSupport
import Testing

/// `appstore_reconcile` in a running pipeline (the binary, the fake App Store Server API):
/// subscriptions whose period ended with no renewal and no expiry notice are asked about by
/// themselves, once per stale period; the others never.
@Suite(
    "appstore_reconcile: a running pipeline asks Apple about stale subscriptions (the binary, a fake App Store Server API)",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(10)))
struct ReconcileStageEndToEndTests {
    typealias Bed = ReconcileCLIEndToEndTests.Bed

    @Test("a renewal Signet never heard of is found and applied; a lapse Apple confirms is asked once; an announced expiry is never asked")
    func staleSubscriptionsAreReconciled() async throws {
        let bed = try await Bed.make()
        do {
            try await staleSubscriptionsAreReconciled(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func staleSubscriptionsAreReconciled(_ bed: Bed) async throws {
        let day = ReconcileCLIEndToEndTests.day
        let now = WallClock.milliseconds()
        let start = now - 30 * day, ended = now - 2 * 3_600_000, signed = now - 29 * day
        // 1001 and 1003 were to renew two hours ago and nothing came; 1002 said it would not renew.
        bed.fake.addTransactions([
            try bed.status("1001", id: "1001", purchase: start, expires: ended, signed: signed),
            try bed.status("1002", id: "1002", purchase: start, expires: ended, signed: signed, autoRenew: false),
            try bed.status("1003", id: "1003", purchase: start, expires: ended, signed: signed),
        ])
        let seeded = try await bed.reconcile(["--original-transaction-id", "1001", "--original-transaction-id", "1002", "--original-transaction-id", "1003"])
        #expect(seeded.exitCode == 0, "\(seeded.stderr)")
        let seedRequests = bed.fake.requests(.subscriptionStatuses).count
        // Apple renewed 1001 (the DID_RENEW never reached Signet); 1003 lapsed unannounced.
        bed.fake.addTransactions([try bed.status("1001", id: "2001", purchase: ended, expires: now + 28 * day, signed: now - 60_000)])

        let stdin = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
        let pipeline = stdin.replacingOccurrences(
            of: "stages:\n", with: "stages:\n  - type: appstore_reconcile\n    interval: 1s\n    window: 3d\n    leeway: 1m\n")
        let file = bed.directory.path("reconcile-stage.yaml")
        try pipeline.write(toFile: file, atomically: true, encoding: .utf8)
        let child = try ChildProcess.signet(["run", "--pipeline", file], environment: bed.environment)
        defer { child.stop() }
        func renewed() -> Bool {
            child.stdoutText.split(separator: "\n").contains { line in
                guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
                return event["originalTransactionId"] as? String == "1001" && event["source"] as? String == "subscription_status"
                    && event["entitled"] as? Bool == true
            }
        }
        #expect(await child.waitUntil(timeout: .seconds(60)) { renewed() }, "stderr: \(child.stderrTail())")
        // Three more sweeps: nothing is asked twice for the same period.
        try await Task.sleep(for: .seconds(3.5))
        child.closeInput()
        #expect(await child.exit(within: .seconds(60)) == 0, "stderr: \(child.stderrTail())")
        let asked = bed.fake.requests(.subscriptionStatuses).dropFirst(seedRequests).compactMap(\.pathParameter)
        #expect(asked.sorted() == ["1001", "1003"], "asked: \(asked)")
        #expect(child.stderrText.contains("asked Apple about 2 stale subscriptions"), "stderr: \(child.stderrTail())")

        let answer = try await SignetProcess.output(
            ["entitlements", "--original-transaction-id", "1001"], environment: bed.environment, timeout: 60)
        let rows = try #require(try JSONSerialization.jsonObject(with: answer.stdout) as? [[String: Any]])
        #expect(rows.first?["entitled"] as? Bool == true && rows.first?["transactionId"] as? String == "2001", "\(answer.stdoutText)")
    }
}

import Foundation
import SignetCore
import SignetTestSupport
import Testing

/// `signet support extend` against the fake App Store with a real state store (issue 57): the
/// store's state refuses what Apple would, the audit log makes a repeated request identifier one
/// action (Apple asked once) and counts Apple's two extensions a year, and `signet support audit`
/// exports who did what.
@Suite("support: extensions through the binary, with the audit log", .tags(.endToEnd), .serialized, .timeLimit(.minutes(5)))
struct SupportCLIEndToEndTests {
    typealias Bed = ReconcileCLIEndToEndTests.Bed
    static let day: Int64 = 86_400_000

    @Test("one action per request id, two extensions a year, a refunded purchase refused, the log exported")
    func extensions() async throws {
        let bed = try await Bed.make()
        do {
            try await extensions(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func extensions(_ bed: Bed) async throws {
        let now = WallClock.milliseconds()
        bed.fake.addTransactions([
            try bed.status("3001", id: "3001", purchase: now - 40 * Self.day, expires: now + 5 * Self.day, signed: now - Self.day),
            try bed.status(
                "3002", id: "3002", purchase: now - 40 * Self.day, expires: now + 5 * Self.day, signed: now - Self.day,
                revoked: now - Self.day),
        ])
        bed.fake.support.addSubscription("3001", expiresDate: now + 5 * Self.day)
        bed.fake.support.addSubscription("3002", expiresDate: now + 5 * Self.day)
        let seeded = try await bed.reconcile(["--original-transaction-id", "3001", "--original-transaction-id", "3002"])
        #expect(seeded.exitCode == 0, "\(seeded.stderr)")

        func support(_ arguments: [String], as operatorName: String = "ana") async throws -> SignetProcess.Result {
            try await SignetProcess.output(["support"] + arguments + ["--operator", operatorName], environment: bed.environment, timeout: 60)
        }
        let request = "7E1D6A3C-0F2B-4B8E-9C3D-5A6B7C8D9E0F"
        let first = try await support(["extend", "3001", "--days", "3", "--reason", "service-issue", "--request-id", request])
        #expect(first.exitCode == 0, "\(first.stderr)")
        let printed = try JSONSerialization.jsonObject(with: Data(first.stdoutText.utf8)) as? [String: Any]
        #expect(printed?["success"] as? Bool == true && printed?["effectiveDate"] as? Int64 == now + 8 * Self.day, "\(first.stdoutText)")

        // The same request id again, by another operator: the recorded answer, Apple not asked.
        let again = try await support(["extend", "3001", "--days", "3", "--reason", "3", "--request-id", request.lowercased()], as: "bob")
        #expect(again.exitCode == 0 && again.stdoutText.contains("done already by ana"), "\(again.stdoutText) \(again.stderr)")
        #expect(bed.fake.requests(.renewalExtension).count == 1)
        #expect(bed.fake.support.extensionCounts["3001"] == 1)

        // A second extension goes; a third within 365 days is refused from the log, nothing sent.
        let second = try await support(["extend", "3001", "--days", "1", "--reason", "customer-satisfaction"])
        #expect(second.exitCode == 0, "\(second.stderr)")
        let third = try await support(["extend", "3001", "--days", "1", "--reason", "other"])
        #expect(third.exitCode == 2 && third.stderr.contains("extended twice within 365 days"), "\(third.stderr)")
        #expect(bed.fake.requests(.renewalExtension).count == 2)

        // The store knows 3002 was refunded: refused here, nothing sent.
        let refunded = try await support(["extend", "3002", "--days", "3", "--reason", "other"])
        #expect(refunded.exitCode == 2 && refunded.stderr.contains("refunded"), "\(refunded.stderr)")
        #expect(bed.fake.requests(.renewalExtension).count == 2)

        // A request id recorded for one purchase is refused for another.
        let reused = try await support(["extend", "3002", "--days", "3", "--reason", "other", "--request-id", request, "--skip-state-check"])
        #expect(reused.exitCode == 2 && reused.stderr.contains("names another action"), "\(reused.stderr)")

        // No key configured: nothing sent, and nothing recorded as pending either.
        var keyless = bed.environment
        keyless["SIGNET_APPSTORE_KEY_ID"] = nil
        let unconfigured = try await SignetProcess.output(
            ["support", "extend", "3001", "--days", "1", "--reason", "other", "--skip-state-check"], environment: keyless, timeout: 60)
        #expect(unconfigured.exitCode == 2 && unconfigured.stderr.contains("SIGNET_APPSTORE_KEY_ID"), "\(unconfigured.stderr)")

        let audit = try await SignetProcess.output(["support", "audit", "--purchase", "3001"], environment: bed.environment, timeout: 60)
        let lines = audit.stdoutText.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 2, "\(audit.stdoutText)")
        #expect(lines.first?["requestIdentifier"] as? String == request.lowercased() && lines.first?["actor"] as? String == "ana")
        #expect(lines.allSatisfy { $0["status"] as? String == "done" && $0["action"] as? String == "extend" }, "\(audit.stdoutText)")
    }
}

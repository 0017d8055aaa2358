import Foundation
import SignetTestSupport
import Testing

/// `signet expire` (issue 11 §1) on the store a `signet run` of the default pipeline left:
/// the events of access that ended by time, once, as NDJSON.
@Suite("signet expire end to end", .timeLimit(.minutes(10)))
struct ExpireCLIEndToEndTests {
    @Test("expire prints what ended by time once, and state agrees", .ownThread)
    func expireOnceAfterARun() throws {
        let corpus = try StateCorpus.get()
        let dataDir = corpus.directory.appendingPathComponent("runs/expire-\(UUID().uuidString.prefix(8))")
        // The data dir's parent must exist (a missing parent is a usage error); the run creates the rest.
        try FileManager.default.createDirectory(at: dataDir.deletingLastPathComponent(), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let env = ["SIGNET_DATA_DIR": dataDir.path]
        let input = Data((corpus.customers.flatMap(\.lines).joined(separator: "\n") + "\n").utf8)
        let run = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: env)
        try #require(run.exitCode == 0, "\(run.stderr)")

        let granted = try #require(corpus.customers.first { $0.name == "granted" })
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Nothing of the granted customer has ended yet.
        let early = try StateE2E.signet(["expire", "--at", String(now)], corpus: corpus, extra: env)
        #expect(early.exitCode == 0, "\(early.stderr)")
        #expect(!early.stdoutText.contains(granted.originalTransactionId), "\(early.stdoutText)")

        // A year later every subscription still active has ended, each said once.
        let later = String(now + 400 * StateE2E.day)
        let swept = try StateE2E.signet(["expire", "--at", later], corpus: corpus, extra: env)
        #expect(swept.exitCode == 0, "\(swept.stderr)")
        let events = try swept.jsonLines()
        #expect(events.allSatisfy { $0["source"] as? String == "clock" }, "\(events)")
        #expect(events.allSatisfy { ["expired", "billing_retry_entered", "entitlement_changed"].contains($0["type"] as? String ?? "") })
        let expired = Set(events.filter { $0["type"] as? String == "expired" }.compactMap { $0["originalTransactionId"] as? String })
        for customer in corpus.customers where customer.expectedState == "active" {
            #expect(expired.contains(customer.originalTransactionId), "\(customer.name) did not expire: \(events)")
        }
        let ids = events.compactMap { $0["eventId"] as? String }
        #expect(Set(ids).count == ids.count && !ids.isEmpty)

        let again = try StateE2E.signet(["expire", "--at", later], corpus: corpus, extra: env)
        #expect(again.exitCode == 0 && again.stdout.isEmpty, "a second sweep printed: \(again.stdoutText)")
        let show = try StateE2E.signet(["state", "show", "--original-transaction-id", granted.originalTransactionId], corpus: corpus, extra: env)
        let snapshot = try JSONSerialization.jsonObject(with: show.stdout) as? [String: Any]
        #expect(snapshot?["state"] as? String == "expired" && snapshot?["entitled"] as? Bool == false, "\(String(describing: snapshot))")
        // A run on the same store afterwards has nothing left to deliver from the sweep.
        let rerun = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: env)
        #expect(rerun.exitCode == 0 && rerun.stdout.isEmpty, "\(rerun.stdoutText.prefix(400))")
    }
}

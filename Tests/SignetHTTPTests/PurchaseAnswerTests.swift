import AppStoreModels
import Foundation
import Signet
import SignetCore
import SignetFixtures
import SignetHTTP
import SignetJWS
import SignetTestSupport
import Testing

/// The purchase answer is read from the committed record, never from the request body:
/// a test stage after `verify` puts another verified transaction on the record, and the
/// answer names that one. A notification posted to the purchase path is turned away by
/// `decode` (400), dead-lettered, and applies nothing.
@Suite("POST /v1/purchases answers from the verified record", .serialized)
struct PurchaseAnswerTests {
    /// Puts `replacement` where `verify` put the record's transaction.
    struct ReplaceTransactionStage: RecordStage {
        let name = "replace_transaction"
        let replacement: VerifiedTransaction

        func process(record: inout Record) throws(RecordRejection) {
            guard case .transaction? = record[VerifiedPayloadPart.self] else { return }
            record[VerifiedPayloadPart.self] = .transaction(replacement)
        }
    }

    @Test("the answer's ids are the verified record's; a notification body is 400 and applies nothing")
    func answerComesFromTheRecord() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-purchase-answer")
        defer { directory.remove() }
        let fixtures = FixtureSet(directory: directory.url)
        let summary = try fixtures.write(count: 40)
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [try fixtures.loadOrCreatePKI().root], environment: .sandbox, bundleId: fixtures.bundleId))
        let posted = try #require(try WebhookHarness.lines(directory.path("transactions.ndjson")).first)
        let postedTransaction = try verifier.verifyTransaction(try DecodeStage.envelope(from: Array(posted.utf8)).jws)
        let notifications = try WebhookHarness.lines(directory.path("notifications.ndjson"))
        // Another purchase, one with an appAccountToken, from the same fixtures.
        let replacement = try #require(try notifications.lazy.compactMap { line in
            try verifier.verifyNotification(try DecodeStage.envelope(from: Array(line.utf8)).jws).transaction
        }.first {
            $0.payload.appAccountToken != nil && $0.payload.originalTransactionId != postedTransaction.payload.originalTransactionId
        })

        var registry = Signet.makeRegistry()
        registry.registerStage(ComponentSpec(name: "replace_transaction", summary: "test", requiresBefore: ["verify"])) { _, _ in
            ReplaceTransactionStage(replacement: replacement)
        }
        let yaml = """
            stores: { default: { type: memory } }
            source: { type: http, address: 127.0.0.1:0, purchases_path: /v1/purchases }
            stages:
              - type: decode
              - { type: verify, roots: \(summary.rootPath), environment: Sandbox, bundle_id: \(fixtures.bundleId) }
              - type: replace_transaction
              - type: dedupe
              - type: transition
            sinks: { events: { type: file, path: \(directory.path("events.ndjson")) } }
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            settings: { progress_interval: 0s }
            """
        let pipeline = try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "purchase-answer.yaml")
        let source = try #require(pipeline.source as? HTTPSource)
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }
        let port = try await WebhookHarness.boundPort(of: source)
        let url = "http://127.0.0.1:\(port)/v1/purchases"

        let answer = try await Curl.request(url, body: posted)
        #expect(answer.status == 200, "\(answer.body)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        #expect(json["status"] as? String == "committed")
        #expect(json["originalTransactionId"] as? String == replacement.payload.originalTransactionId)
        #expect(json["appAccountToken"] as? String == replacement.payload.appAccountToken)
        #expect(json["originalTransactionId"] as? String != postedTransaction.payload.originalTransactionId)
        let entitlements = try #require(json["entitlements"] as? [[String: Any]], "\(json)")
        #expect(entitlements.first?["originalTransactionId"] as? String == replacement.payload.originalTransactionId)

        let eventsBefore = try WebhookHarness.lines(directory.path("events.ndjson")).count
        let notification = try await Curl.request(url, body: notifications[0])
        #expect(notification.status == 400, "\(notification.body)")
        let refused = try #require(try JSONSerialization.jsonObject(with: Data(notification.body.utf8)) as? [String: Any])
        #expect(refused["error"] as? String == "not_a_transaction")
        #expect((refused["detail"] as? String)?.contains("signedTransaction") == true, "\(refused)")

        await runner.requestStop()
        let result = try await run.value
        #expect(result.rejected == 1)
        #expect(try WebhookHarness.lines(directory.path("events.ndjson")).count == eventsBefore)
        let dead = try #require(try WebhookHarness.lines(directory.path("dead.ndjson")).first)
        let letter = try #require(try JSONSerialization.jsonObject(with: Data(dead.utf8)) as? [String: Any])
        #expect(letter["stage"] as? String == "decode")
        #expect(letter["reason"] as? String == "missing_signed_payload")
    }
}

import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing
import AppStoreModels

/// Issue 11 §1 through the real runner: a line stream that stays open (stdin's shape: a
/// FIFO whose writer never closes) with signed notifications, the real decode and verify
/// stages, and a transition stage whose sweep clock the test moves. The sweep's event must
/// reach the sink while no input arrives, and the run's counts must not treat it as input.
@Suite(.timeLimit(.minutes(10)))
struct ExpiryPipelineTests {
    static let t0 = Fixture.t0, day = Fixture.day
    static let bundleId = "com.example.signet"

    /// Signs notifications the way Apple shapes them (Sandbox).
    struct Signer {
        let signer: JWSSigner
        var sequence = 0

        func transaction(otid: String, id: String, purchase: Int64, expires: Int64, signed: Int64, revoked: Int64? = nil) -> [String: Any] {
            var t: [String: Any] = [
                "transactionId": id, "originalTransactionId": otid, "bundleId": ExpiryPipelineTests.bundleId,
                "productId": "pro.monthly", "purchaseDate": purchase, "originalPurchaseDate": ExpiryPipelineTests.t0,
                "expiresDate": expires, "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
                "signedDate": signed, "environment": "Sandbox", "transactionReason": "PURCHASE",
            ]
            if let revoked {
                t["revocationDate"] = revoked
                t["revocationReason"] = 0
                t["revocationType"] = "REFUND_FULL"
            }
            return t
        }

        func renewal(otid: String, autoRenew: Bool, signed: Int64, renewalDate: Int64) -> [String: Any] {
            [
                "originalTransactionId": otid, "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
                "autoRenewStatus": autoRenew ? 1 : 0, "isInBillingRetryPeriod": false, "signedDate": signed,
                "environment": "Sandbox", "renewalDate": renewalDate,
            ]
        }

        mutating func line(_ type: String, _ subtype: String?, signed: Int64, transaction: [String: Any], renewal: [String: Any], status: Int) throws -> String {
            sequence += 1
            let data: [String: Any] = [
                "bundleId": ExpiryPipelineTests.bundleId, "environment": "Sandbox", "status": status,
                "signedTransactionInfo": try sign(transaction), "signedRenewalInfo": try sign(renewal),
            ]
            var body: [String: Any] = [
                "notificationType": type, "notificationUUID": String(format: "9e1f0000-0000-4000-8000-%012x", sequence),
                "version": "2.0", "signedDate": signed, "data": data,
            ]
            if let subtype { body["subtype"] = subtype }
            return #"{"signedPayload":""# + (try sign(body)) + #""}"#
        }

        private func sign(_ object: [String: Any]) throws -> String {
            try signer.sign(payload: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
    }

    static func events(in path: String) -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// Waits (bounded) until `condition` holds for the events written so far.
    static func waitForEvents(in path: String, _ condition: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        for _ in 0..<600 {
            let events = events(in: path)
            if condition(events) { return events }
            try await Task.sleep(for: .milliseconds(50))
        }
        return events(in: path)
    }

    @Test(arguments: StoreFactory.all)
    func anOpenStreamEmitsTimeDrivenExpiries(_ factory: StoreFactory) async throws {
        let pki = try TestPKI()
        var signer = Signer(signer: pki.signer)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-expiry-pipeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("stdin").path
        let eventsPath = directory.appendingPathComponent("events.ndjson").path
        try #require(mkfifo(fifo, 0o600) == 0)
        // Read-write keeps the FIFO open for writing without blocking; it never reaches EOF.
        let writer = open(fifo, O_RDWR)
        try #require(writer >= 0)
        var writerOpen = true
        defer { if writerOpen { close(writer) } }

        let store = try await factory.make()
        defer { try? store.close() }
        let clock = TestClock(Self.t0 + Self.day)
        var options = TransitionStage.Options()
        options.clock = clock.function
        options.expirySweep = .milliseconds(20)
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(roots: [pki.root], environment: .sandbox, bundleId: Self.bundleId))
        let pipeline = try Pipeline(
            source: LineSource(path: fifo),
            stages: [
                DecodeStage(), VerifyStage(verifier: verifier, parallelism: 1), DedupeStage(store: store),
                TransitionStage(store: store, options: options), FanoutStage(routes: [], defaultSinks: ["events"]),
            ],
            sinks: [NamedSink(name: "events", sink: FileSink(path: eventsPath, fsync: false))],
            deadLetter: DeadLetterOutput(sink: FileSink(path: directory.appendingPathComponent("dead.ndjson").path, fsync: false)))
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }

        // "lapsing": a monthly subscription with auto-renew off (no EXPIRED will come).
        // "renewed-unseen": its renewal notification is lost; Apple's REFUND of the first period
        // says status 1 and renewalDate t0+60d, the signed evidence of the current period.
        let end = Self.t0 + 30 * Self.day
        var lines = [
            try signer.line("SUBSCRIBED", "INITIAL_BUY", signed: Self.t0,
                            transaction: signer.transaction(otid: "7001", id: "7001", purchase: Self.t0, expires: end, signed: Self.t0),
                            renewal: signer.renewal(otid: "7001", autoRenew: false, signed: Self.t0, renewalDate: end), status: 1),
            try signer.line("SUBSCRIBED", "INITIAL_BUY", signed: Self.t0,
                            transaction: signer.transaction(otid: "7002", id: "7002", purchase: Self.t0, expires: end, signed: Self.t0),
                            renewal: signer.renewal(otid: "7002", autoRenew: true, signed: Self.t0, renewalDate: end), status: 1),
        ]
        let refundSigned = Self.t0 + 40 * Self.day
        lines.append(try signer.line(
            "REFUND", nil, signed: refundSigned,
            transaction: signer.transaction(otid: "7002", id: "7002", purchase: Self.t0, expires: end, signed: refundSigned, revoked: refundSigned),
            renewal: signer.renewal(otid: "7002", autoRenew: true, signed: refundSigned, renewalDate: Self.t0 + 60 * Self.day), status: 1))
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        try #require(text.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == text.count)

        let inputEvents = try await Self.waitForEvents(in: eventsPath) { $0.count >= 3 }
        #expect(inputEvents.map { $0["type"] as? String } == ["granted", "granted", "renewed"], "\(inputEvents)")
        #expect(inputEvents.last?["expiresDate"] as? Int64 == Self.t0 + 60 * Self.day)

        // Time passes; no input arrives. The running pipeline's sweep says what ended.
        clock.now = end + Self.day
        let afterSweep = try await Self.waitForEvents(in: eventsPath) { $0.count >= 4 }
        let swept = afterSweep.dropFirst(3)
        #expect(swept.map { $0["type"] as? String } == ["expired"])
        #expect(swept.first?["originalTransactionId"] as? String == "7001")
        #expect(swept.first?["source"] as? String == "clock")

        close(writer)
        writerOpen = false
        let summary = try await run.value
        #expect(summary.read == 3)
        #expect(summary.passed == 3, "generated records are not input")
        #expect(summary.delivered == Self.events(in: eventsPath).count)
        #expect(Self.events(in: eventsPath).count == 4, "nothing else was emitted")
        #expect(try store.undeliveredEvents().isEmpty, "the sweep's events were acknowledged")
        #expect(try store.subscription(originalTransactionId: "7001")?.state == .expired)
        #expect(try store.subscription(originalTransactionId: "7002")?.state == .active)
    }
}

import Foundation
import SignetCore
import SignetFixtures
import SignetTestSupport
import Testing

/// `appstore_consumption` in a running pipeline (the binary, the fake App Store Server API):
/// refund questions arrive on stdin, the backend's consent is recorded through the CLI beside
/// the running pipeline, and only consented customers are answered, once each.
@Suite(
    "appstore_consumption: a running pipeline answers refund questions with consent (the binary, a fake App Store Server API)",
    .tags(.endToEnd), .serialized, .timeLimit(.minutes(10)))
struct ConsumptionStageEndToEndTests {
    typealias Bed = ReconcileCLIEndToEndTests.Bed

    @Test("consented customers are answered once (a repeated request too), the others never; the listing says why")
    func consentedCustomersAreAnswered() async throws {
        let bed = try await Bed.make()
        do {
            try await consentedCustomersAreAnswered(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    /// A signed notification line about consumable `id` bought by `token`.
    static func line(_ bed: Bed, type: String, uuid: String, id: String, token: String, signed: Int64) throws -> String {
        func sign(_ object: [String: Any]) throws -> String {
            try bed.signer.sign(payload: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        let transaction: [String: Any] = [
            "transactionId": id, "originalTransactionId": id, "bundleId": ReconcileCLIEndToEndTests.bundleId,
            "productId": "coins.100", "purchaseDate": signed - 86_400_000, "originalPurchaseDate": signed - 86_400_000, "quantity": 1,
            "type": "Consumable", "inAppOwnershipType": "PURCHASED", "signedDate": signed, "environment": "Sandbox",
            "transactionReason": "PURCHASE", "appAccountToken": token,
        ]
        var data: [String: Any] = [
            "bundleId": ReconcileCLIEndToEndTests.bundleId, "environment": "Sandbox", "signedTransactionInfo": try sign(transaction),
        ]
        if type == "CONSUMPTION_REQUEST" { data["consumptionRequestReason"] = "UNINTENDED_PURCHASE" }
        let notification: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signed, "data": data,
        ]
        return #"{"signedPayload":""# + (try sign(notification)) + "\"}\n"
    }

    func consentedCustomersAreAnswered(_ bed: Bed) async throws {
        let now = WallClock.milliseconds()
        let customers = [("c-consented", "11111111-1111-4111-8111-111111111111"), ("c-silent", "22222222-2222-4222-8222-222222222222"),
                         ("c-purchase", "33333333-3333-4333-8333-333333333333"), ("c-withdrawn", "44444444-4444-4444-8444-444444444444")]
        for (id, _) in customers {
            bed.fake.addConsumptionTransaction(id, productType: "Consumable", consented: !["c-silent", "c-withdrawn"].contains(id))
        }

        let stdin = try String(contentsOfFile: FixturePaths.packageRoot.appendingPathComponent("Pipelines/stdin.yaml").path, encoding: .utf8)
        // After transition, so a new request wakes it; the long interval shows it does.
        let pipeline = stdin.replacingOccurrences(
            of: "  - type: fanout", with: "  - type: appstore_consumption\n    interval: 1h\n    refund_preference: DECLINE\n  - type: fanout")
        #expect(pipeline.contains("appstore_consumption"))
        let file = bed.directory.path("consumption-stage.yaml")
        try pipeline.write(toFile: file, atomically: true, encoding: .utf8)
        let lint = try await SignetProcess.output(["lint", file], environment: bed.environment, timeout: 60)
        #expect(lint.exitCode == 0, "\(lint.stderr)")

        let child = try ChildProcess.signet(["run", "--pipeline", file], environment: bed.environment)
        defer { child.stop() }
        for (id, token) in customers {
            try child.write(try Self.line(bed, type: "ONE_TIME_CHARGE", uuid: "buy-\(id)", id: id, token: token, signed: now - 3_600_000))
        }
        let database = bed.environment["SIGNET_DATA_DIR"].map { $0 + "/signet.sqlite" } ?? ""
        #expect(await child.waitUntil(timeout: .seconds(60)) { FileManager.default.fileExists(atPath: database) }, "\(child.stderrTail())")
        // The backend's consent, recorded beside the running pipeline: one per customer, one per
        // purchase. A backend in Swift writes the token as uuidString (upper case) while Apple
        // signs it in lower case: the same customer (issue 53). The last customer consented, then
        // withdrew through a backend that writes upper case: Apple must not be answered.
        for (verb, arguments) in [
            ("grant", ["--app-account-token", customers[0].1.uppercased()]), ("grant", ["--original-transaction-id", "c-purchase"]),
            ("grant", ["--app-account-token", customers[3].1]), ("withdraw", ["--app-account-token", customers[3].1.uppercased()]),
        ] {
            let recorded = try await SignetProcess.output(
                ["consumption", "consent", verb, "--by", "e2e"] + arguments, environment: bed.environment, timeout: 60)
            #expect(recorded.exitCode == 0, "\(recorded.stderr)")
        }
        for (id, token) in customers {
            try child.write(try Self.line(bed, type: "CONSUMPTION_REQUEST", uuid: "ask-\(id)", id: id, token: token, signed: now - 60_000))
        }
        // Apple asks the first customer again, with a new notificationUUID.
        try child.write(try Self.line(bed, type: "CONSUMPTION_REQUEST", uuid: "ask-again", id: "c-consented", token: customers[0].1, signed: now - 30_000))
        func answered() -> Set<String> { Set(bed.fake.requests(.consumption).compactMap(\.pathParameter)) }
        #expect(await child.waitUntil(timeout: .seconds(60)) { answered() == ["c-consented", "c-purchase"] }, "\(answered()) \(child.stderrTail())")
        // A few more sweeps: nothing is sent twice, the silent customer never.
        try await Task.sleep(for: .seconds(3))
        child.closeInput()
        #expect(await child.exit(within: .seconds(60)) == 0, "stderr: \(child.stderrTail())")
        let sent = bed.fake.requests(.consumption).compactMap(\.pathParameter)
        #expect(sent.sorted() == ["c-consented", "c-purchase"], "\(sent)")
        #expect(bed.fake.rejectedConsumptionBodies.isEmpty && bed.fake.duplicateConsumptionAnswers.isEmpty)
        #expect(bed.fake.consentlessConsumptionAnswers.isEmpty && bed.fake.lateConsumptionAnswers.isEmpty)
        for request in bed.fake.requests(.consumption) {
            let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
            #expect(body["refundPreference"] as? String == "DECLINE" && body["deliveryStatus"] as? String == "DELIVERED", "\(body)")
        }

        let listing = try await SignetProcess.output(["consumption", "requests"], environment: bed.environment, timeout: 60)
        let requests = try #require((try JSONSerialization.jsonObject(with: listing.stdout) as? [String: Any])?["requests"] as? [[String: Any]])
        let statuses = Dictionary(uniqueKeysWithValues: requests.compactMap { row in (row["transactionId"] as? String).map { ($0, row) } })
        #expect(statuses.count == 4, "\(listing.stdoutText)")
        #expect(statuses["c-consented"]?["status"] as? String == "answered" && statuses["c-consented"]?["repeats"] as? Int == 1)
        #expect(statuses["c-purchase"]?["status"] as? String == "answered")
        #expect(statuses["c-silent"]?["status"] as? String == "skipped", "\(statuses["c-silent"] ?? [:])")
        #expect((statuses["c-silent"]?["detail"] as? String)?.contains("no consent") == true)
        #expect(statuses["c-withdrawn"]?["status"] as? String == "skipped", "\(statuses["c-withdrawn"] ?? [:])")

        let report = try await SignetProcess.output(["consumption", "report", "--since", "1d"], environment: bed.environment, timeout: 60)
        let figures = try #require(try JSONSerialization.jsonObject(with: report.stdout) as? [String: Any])
        let total = try #require((figures["total"] as? [String: Any])?["statuses"] as? [String: Any], "\(report.stdoutText)")
        #expect(total["requests"] as? Int == 4 && total["answered"] as? Int == 2 && total["skipped"] as? Int == 2 && total["repeats"] as? Int == 1)
        let byPreference = ((figures["products"] as? [String: Any])?["coins.100"] as? [String: Any])?["outcomesByPreference"] as? [String: Any]
        #expect((byPreference?["DECLINE"] as? [String: Any])?["undecided"] as? Int == 2, "\(report.stdoutText)")
    }
}

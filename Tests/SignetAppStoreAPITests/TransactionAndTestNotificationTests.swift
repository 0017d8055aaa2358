import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetCore
import SignetFixtures
import SignetJWS
import SignetTestSupport
import Testing

@Suite("Transactions, statuses, the Sandbox fallback and test notifications")
struct TransactionAndTestNotificationTests {
    /// The samples that carry a transaction.
    static var transactionSamples: [FakeAppStoreAPISample] {
        APITestBed.samples.filter { $0.signedTransaction != nil && $0.sample.transactionId != nil }
    }

    static func stored(_ sample: FakeAppStoreAPISample, status: Int = 1) -> FakeAppStoreAPI.StoredTransaction {
        .init(
            transactionId: sample.sample.transactionId!, originalTransactionId: sample.sample.originalTransactionId ?? sample.sample.transactionId!,
            signedTransactionInfo: sample.signedTransaction!, status: status)
    }

    @Test("a bare id unknown to Production: asked twice there (4040010, a short wait), then found in Sandbox")
    func sandboxFallback() async throws {
        let bed = try APITestBed()
        let sandbox = try await bed.startFake(.sandbox)
        let sample = Self.transactionSamples[0]
        sandbox.addTransactions([Self.stored(sample)])
        try await withFakeAPI(.production, bed: bed, client: { try $0.client($1, environment: .production, sandboxFallback: sandbox) }) { production, client in
            let found = try await client.lookUpTransaction(transactionId: sample.sample.transactionId!)
            #expect(found.environment == .sandbox)
            #expect(found.signedTransactionInfo == sample.signedTransaction)
            #expect(try found.verified(by: APITestBed.verifier()).payload.transactionId == sample.sample.transactionId)
            let asked = production.requests(.transactionInfo)
            #expect(asked.map(\.status) == [404, 404])
            #expect(asked[1].arrival - asked[0].arrival >= .milliseconds(200))
            #expect(sandbox.requests(.transactionInfo).map(\.status) == [200])

            // Known to Production: Sandbox is never asked.
            let other = Self.transactionSamples[1]
            production.addTransactions([Self.stored(other)])
            #expect(try await client.lookUpTransaction(transactionId: other.sample.transactionId!).environment == .production)
            #expect(sandbox.requests(.transactionInfo).count == 1)
        }
        await sandbox.stop()
    }

    @Test("configured for Sandbox: a 4040010 is thrown, no other host is asked")
    func noFallbackInSandbox() async throws {
        try await withFakeAPI { fake, client in
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await client.lookUpTransaction(transactionId: "2000000000000001") }
            #expect(error?.isTransactionIdNotFound == true)
            #expect(fake.requests.count == 1)
        }
    }

    @Test("transaction history pages by revision and keeps each transactionId once, verified")
    func historyDeduplicates() async throws {
        try await withFakeAPI { fake, client in
            let samples = Array(Self.transactionSamples.prefix(3))
            let original = samples[0].sample.originalTransactionId!
            fake.addTransactions([Self.stored(samples[0])])
            let signed = samples.map { $0.signedTransaction! }
            // Already holds signed[0]; then 0 again, 1, 2, 1: five entries, three transactions.
            fake.appendHistory(originalTransactionId: original, signedTransactions: [signed[0], signed[1], signed[2], signed[1]])
            fake.setPageSizes(transactions: 2)
            let transactions = try await client.transactionHistory(transactionId: original, verifier: APITestBed.verifier())
            #expect(transactions.map(\.payload.transactionId) == samples.map(\.sample.transactionId))
            let asked = fake.requests(.transactionHistory)
            #expect(asked.map { $0.query["revision"]?.first } == [nil, "rev-2", "rev-4"])
        }
    }

    @Test("a transaction that fails verification fails the history call")
    func historyVerifies() async throws {
        try await withFakeAPI { fake, client in
            let sample = Self.transactionSamples[0]
            fake.addTransactions([Self.stored(sample)])
            // Signed under a root the verifier does not trust.
            let forged = try TestPKI(name: "Elsewhere").signer.sign(payload: sample.sample.transactionPayload!)
            fake.appendHistory(originalTransactionId: sample.sample.originalTransactionId!, signedTransactions: [forged])
            await #expect(throws: RecordRejection.self) {
                _ = try await client.transactionHistory(transactionId: sample.sample.transactionId!, verifier: APITestBed.verifier())
            }
        }
    }

    @Test("subscription statuses: the latest transaction verifies; a status filter is sent as status=N")
    func statuses() async throws {
        try await withFakeAPI { fake, client in
            let sample = Self.transactionSamples[0]
            fake.addTransactions([Self.stored(sample, status: 1)])
            let response = try await client.subscriptionStatuses(transactionId: sample.sample.transactionId!)
            #expect(response.environment == .sandbox)
            let last = try #require(response.data.first?.lastTransactions.first)
            #expect(last.status == .active)
            #expect(try last.verifiedTransaction(by: APITestBed.verifier())?.payload.originalTransactionId == sample.sample.originalTransactionId)

            let filtered = try await client.subscriptionStatuses(transactionId: sample.sample.transactionId!, status: [.expired, .revoked])
            #expect(filtered.data.first?.lastTransactions.isEmpty == true)
            #expect(fake.requests(.subscriptionStatuses).last?.query["status"] == ["2", "5"])
        }
    }

    @Test("request a test notification, then its status: the payload verifies")
    func testNotification() async throws {
        try await withFakeAPI { fake, client in
            let payload = APITestBed.samples[0].signedPayload
            fake.setTestNotificationPayload(payload)
            let token = try await client.requestTestNotification()
            let status = try await client.testNotificationStatus(token: token.testNotificationToken)
            #expect(status.signedPayload == payload)
            #expect(status.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
            let verified = try status.verifiedNotification(by: APITestBed.verifier())
            #expect(verified?.payload.notificationUUID == APITestBed.samples[0].sample.notificationUUID)
            #expect(fake.requests(.testNotificationStatus).first?.pathParameter == token.testNotificationToken)
        }
    }
}


import AppStoreModels
import Foundation
import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for consent and refund questions (``ConsumptionStore``,
/// ``ConsumptionTransaction``), on every store kind, through the role's own calls (the
/// behaviour through `transition` is in ConsumptionRequestTests and ConsentRestrictionTests).
@Suite struct ConsumptionStoreContractTests {
    static let token = AppAccountToken(UUID(uuidString: "5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6F")!)

    @Test("consent restrictions: saved, read inside and outside a transaction, replaced when cleared", arguments: StoreKind.available)
    func consentRestrictions(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(try store.consentRestriction(appTransactionId: "app-1") == nil)
        let rescinded = ConsentRestriction(appTransactionId: "app-1", bundleId: "com.example", environment: "Sandbox", rescindedAt: 1_000, notificationUUID: "u-1")
        try store.withTransaction { transaction in
            try transaction.prefetchConsentRestrictions(appTransactionIds: ["app-1", "app-2"])
            #expect(try transaction.consentRestriction(appTransactionId: "app-1") == nil)
            try transaction.save(rescinded)
            #expect(try transaction.consentRestriction(appTransactionId: "app-1") == rescinded)
        }
        #expect(try store.consentRestriction(appTransactionId: "app-1") == rescinded)
        #expect(try store.consentRestriction(appTransactionId: "app-2") == nil)

        let cleared = try #require(try store.clearConsentRestriction(appTransactionId: "app-1", by: "support", at: 2_000))
        #expect(!cleared.isInForce && cleared.clearedAt == 2_000 && cleared.clearedBy == "support")
        #expect(try store.consentRestriction(appTransactionId: "app-1") == cleared)
    }

    @Test("refund questions: kept per transaction and signing instant, listed since an instant, due by dueAt in order", arguments: StoreKind.available)
    func refundQuestions(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        func request(_ id: String, requestedAt: Int64, dueAt: Int64?) -> ConsumptionRequestRecord {
            var record = ConsumptionRequestRecord(
                transactionId: id, originalTransactionId: "o-\(id)", productId: "p", appAccountToken: Self.token,
                environment: "Sandbox", requestedAt: requestedAt, receivedAt: requestedAt + 10)
            record.dueAt = dueAt
            return record
        }
        try store.withTransaction { transaction in
            try transaction.save(request("t1", requestedAt: 1_000, dueAt: 3_000))
            try transaction.save(request("t1", requestedAt: 500_000, dueAt: 2_000))
            try transaction.save(request("t2", requestedAt: 2_000, dueAt: nil))
            try transaction.save(request("t3", requestedAt: 3_000, dueAt: 9_000))
        }
        let t1 = try store.withTransaction { try $0.consumptionRequests(transactionId: "t1") }
        #expect(t1.map(\.requestedAt) == [1_000, 500_000])
        #expect(t1.first?.appAccountToken == Self.token)

        // Replaced, keyed by transaction and signing instant.
        var answered = t1[0]
        answered.status = .answered
        answered.dueAt = nil
        try store.withTransaction { try $0.save(answered) }
        #expect(try store.withTransaction { try $0.consumptionRequests(transactionId: "t1") }.map(\.status) == [.answered, .pending])

        let due = try store.withTransaction { try $0.consumptionRequestsDue(atOrBefore: 5_000, limit: 10) }
        #expect(due.map(\.transactionId) == ["t1"] && due.first?.requestedAt == 500_000)
        #expect(try store.withTransaction { try $0.consumptionRequestsDue(atOrBefore: 9_000, limit: 1) }.map(\.transactionId) == ["t1"])

        #expect(try store.consumptionRequests(requestedSince: 2_000, limit: 10).map(\.transactionId) == ["t2", "t3", "t1"])
        #expect(try store.consumptionRequests(requestedSince: 0, limit: 2).map(\.requestedAt) == [1_000, 2_000])

        // By purchase: every transaction's questions (a renewal's too), oldest first, none of another purchase's.
        try store.withTransaction { transaction in
            var renewal = request("t4", requestedAt: 4_000, dueAt: nil)
            renewal.originalTransactionId = "o-t1"
            try transaction.save(renewal)
        }
        #expect(try store.consumptionRequests(originalTransactionId: "o-t1", limit: 10).map(\.transactionId) == ["t1", "t4", "t1"])
        #expect(try store.consumptionRequests(originalTransactionId: "o-t1", limit: 1).map(\.requestedAt) == [1_000])
        #expect(try store.consumptionRequests(originalTransactionId: "o-none", limit: 10).isEmpty)
    }

    @Test("the ledger: a document per key, read inside and outside a transaction; consent by purchase or account decides by the newest", arguments: StoreKind.available)
    func ledger(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        // The same JSON document (PostgreSQL keeps it as jsonb: its own spacing).
        func json(_ text: String?) throws -> NSDictionary? {
            try text.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? NSDictionary } ?? nil
        }
        #expect(try store.consumptionLedgerEntry("k") == nil)
        try store.withTransaction { transaction in
            try transaction.saveConsumptionLedgerEntry("k", #"{"a":1,"b":"x"}"#)
            #expect(try json(transaction.consumptionLedgerEntry("k")) == ["a": 1, "b": "x"])
        }
        #expect(try json(store.consumptionLedgerEntry("k")) == ["a": 1, "b": "x"])

        let byAccount = ConsumptionConsent(.appAccountToken(Self.token), consented: true, at: 1_000, by: "app")
        let byPurchase = ConsumptionConsent(.originalTransactionId("o-1"), consented: false, at: 2_000, by: "app")
        try store.recordConsumptionConsent(byAccount)
        try store.recordConsumptionConsent(byPurchase)
        // An older write (a retry) changes nothing.
        #expect(try store.recordConsumptionConsent(ConsumptionConsent(.originalTransactionId("o-1"), consented: true, at: 1_500, by: "app")) == byPurchase)
        var question = ConsumptionRequestRecord(transactionId: "t", originalTransactionId: "o-1", appAccountToken: Self.token, requestedAt: 3_000, receivedAt: 3_000)
        #expect(try store.consumptionConsent(for: question) == byPurchase)
        question.originalTransactionId = "o-2"
        #expect(try store.consumptionConsent(for: question) == byAccount)
    }
}

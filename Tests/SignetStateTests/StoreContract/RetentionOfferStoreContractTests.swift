import Foundation
import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for retention answers (``RetentionOfferStore``,
/// ``RetentionOfferTransaction``), on every store kind, through the role's own calls (the
/// outcomes through `transition` are in RetentionOutcomeTests).
@Suite struct RetentionOfferStoreContractTests {
    static func record(
        _ id: String, purchase: String = "o-1", at answeredAt: Int64, rule: String? = "win-back", response: String = #"{"message":{}}"#
    ) -> RetentionOfferRecord {
        RetentionOfferRecord(
            requestIdentifier: id, originalTransactionId: purchase, environment: "Sandbox", productId: "pro.monthly",
            result: rule == nil ? "default" : "answered", reason: rule ?? "no_rule", kind: "message", answeredAt: answeredAt,
            response: response)
    }

    @Test("an answer is kept once per request: a second record of the request returns the first", arguments: StoreKind.available)
    func idempotentOnRequest(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(try store.retentionOffer(requestIdentifier: "r-1") == nil, "\(kind)")
        let first = Self.record("r-1", at: 1_000, response: #"{"message":{"messageIdentifier":"a"}}"#)
        #expect(try store.recordRetentionOffer(first) == first, "\(kind)")
        let again = Self.record("r-1", at: 2_000, rule: "other", response: #"{"message":{"messageIdentifier":"b"}}"#)
        #expect(try store.recordRetentionOffer(again) == first, "\(kind)")
        #expect(try store.retentionOffer(requestIdentifier: "r-1") == first, "\(kind)")
        // The response is kept byte for byte (PostgreSQL keeps the record as JSONB: the string survives).
        #expect(try store.retentionOffer(requestIdentifier: "r-1")?.response == #"{"message":{"messageIdentifier":"a"}}"#, "\(kind)")
    }

    @Test("listed per purchase and since an instant, oldest first, with a limit", arguments: StoreKind.available)
    func listings(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        for record in [
            Self.record("r-3", at: 3_000), Self.record("r-1", at: 1_000), Self.record("r-2", purchase: "o-2", at: 2_000, rule: nil),
            Self.record("r-4", at: 4_000),
        ] {
            _ = try store.recordRetentionOffer(record)
        }
        #expect(try store.retentionOffers(originalTransactionId: "o-1", answeredSince: 0).map(\.requestIdentifier) == ["r-1", "r-3", "r-4"])
        #expect(try store.retentionOffers(originalTransactionId: "o-1", answeredSince: 3_000).map(\.requestIdentifier) == ["r-3", "r-4"])
        #expect(try store.retentionOffers(originalTransactionId: "o-9", answeredSince: 0).isEmpty)
        #expect(try store.retentionOffers(answeredSince: 2_000, limit: 10).map(\.requestIdentifier) == ["r-2", "r-3", "r-4"])
        #expect(try store.retentionOffers(answeredSince: 0, limit: 2).map(\.requestIdentifier) == ["r-1", "r-2"])
        #expect(try store.retentionOffer(requestIdentifier: "r-2")?.rule == nil)
    }

    @Test("pruned oldest first, at most limit per call, only before the instant", arguments: StoreKind.available)
    func pruning(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        for (id, at) in [("r-1", 1_000), ("r-2", 2_000), ("r-3", 3_000), ("r-4", 4_000)] as [(String, Int64)] {
            _ = try store.recordRetentionOffer(Self.record(id, at: at))
        }
        #expect(try store.pruneRetentionOffers(answeredBefore: 3_500, limit: 2) == 2, "\(kind)")
        #expect(try store.retentionOffers(answeredSince: 0, limit: 10).map(\.requestIdentifier) == ["r-3", "r-4"], "\(kind)")
        #expect(try store.pruneRetentionOffers(answeredBefore: 3_500, limit: 2) == 1, "\(kind)")
        #expect(try store.pruneRetentionOffers(answeredBefore: 3_500, limit: 2) == 0, "\(kind)")
        #expect(try store.retentionOffer(requestIdentifier: "r-3") == nil && store.retentionOffer(requestIdentifier: "r-4") != nil, "\(kind)")
    }

    @Test("outcomes: the earliest deciding notification after an answer wins, whatever order they arrive in", arguments: StoreKind.available)
    func outcomes(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        _ = try store.recordRetentionOffer(Self.record("r-1", at: 1_000))
        _ = try store.recordRetentionOffer(Self.record("r-2", at: 5_000))
        _ = try store.recordRetentionOffer(Self.record("r-9", purchase: "o-2", at: 1_000))
        func outcome(_ id: String) throws -> RetentionOutcome? { try store.retentionOffer(requestIdentifier: id)?.outcome }
        let renewed = RetentionOutcome(kept: true, notificationType: "DID_RENEW", subtype: nil, signedAt: 6_000)
        let disabled = RetentionOutcome(kept: false, notificationType: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signedAt: 3_000)
        let expired = RetentionOutcome(kept: false, notificationType: "EXPIRED", subtype: "VOLUNTARY", signedAt: 900)

        // Later-signed first: both answers take it.
        try store.withTransaction { try $0.settleRetentionOffers(originalTransactionId: "o-1", outcome: renewed) }
        #expect(try outcome("r-1") == renewed && outcome("r-2") == renewed, "\(kind)")
        // An earlier one arrives late: it decides the answer given before it, not the later answer.
        try store.withTransaction { try $0.settleRetentionOffers(originalTransactionId: "o-1", outcome: disabled) }
        #expect(try outcome("r-1") == disabled && outcome("r-2") == renewed, "\(kind)")
        // Signed before any answer: decides none.
        try store.withTransaction { try $0.settleRetentionOffers(originalTransactionId: "o-1", outcome: expired) }
        #expect(try outcome("r-1") == disabled && outcome("r-2") == renewed, "\(kind)")
        #expect(try outcome("r-9") == nil, "\(kind): another purchase's answer")

        // Two in one transaction (a shared store queues them for one statement): the same result.
        _ = try store.recordRetentionOffer(Self.record("r-5", purchase: "o-5", at: 1_000))
        _ = try store.recordRetentionOffer(Self.record("r-6", purchase: "o-5", at: 5_000))
        try store.withTransaction { transaction in
            try transaction.settleRetentionOffers(originalTransactionId: "o-5", outcome: renewed)
            try transaction.settleRetentionOffers(originalTransactionId: "o-5", outcome: disabled)
        }
        #expect(try outcome("r-5") == disabled && outcome("r-6") == renewed, "\(kind)")

        // A transaction that fails settles nothing.
        struct Boom: Error {}
        _ = try store.recordRetentionOffer(Self.record("r-7", purchase: "o-7", at: 1_000))
        #expect(throws: Boom.self) {
            try store.withTransaction { transaction in
                try transaction.settleRetentionOffers(originalTransactionId: "o-7", outcome: renewed)
                throw Boom()
            }
        }
        #expect(try outcome("r-7") == nil, "\(kind)")
    }
}

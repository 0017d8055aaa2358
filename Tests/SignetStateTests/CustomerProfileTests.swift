import AppStoreModels
import Foundation
import SignetStateTestSupport
import Testing

@testable import SignetState

/// The support desk's view of a customer: "why" for each state the machine derives, and one
/// timeline merging what the store keeps about the purchase, newest first.
@Suite struct CustomerProfileTests {
    @Test("a day is said as a UTC calendar would say it, leap years and dates before 1970 included")
    func days() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "d MMM yyyy"
        var instants: [Int64] = [0, -1, 86_399_999, 86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, -2_208_988_800_001]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { instants.append(Int64.random(in: -5_000_000_000_000...10_000_000_000_000, using: &generator)) }
        for instant in instants {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(instant) / 1000))
            #expect(AccessExplanation.day(instant) == expected, "\(instant)")
        }
    }

    static let day: Int64 = 86_400_000
    /// 1 Dec 2026 00:00 UTC.
    static let december1: Int64 = 1_796_083_200_000

    static func snapshot(_ state: SubscriptionState, configure: (inout SubscriptionSnapshot) -> Void = { _ in }) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(originalTransactionId: "1000", state: state, entitled: state == .active || state == .gracePeriod)
        snapshot.productId = "pro.monthly"
        snapshot.productType = "Auto-Renewable Subscription"
        configure(&snapshot)
        return snapshot
    }

    @Test("why: one sentence per state, with the dates that decide it (UTC)")
    func why() {
        let d1 = Self.december1, now = Self.december1 + 3 * Self.day
        let cases: [(SubscriptionSnapshot, String)] = [
            (Self.snapshot(.active) { $0.expiresDate = d1 + 7 * Self.day; $0.autoRenewEnabled = true },
             "Active, paid through 8 Dec 2026; renews automatically."),
            (Self.snapshot(.active) { $0.expiresDate = d1 + 7 * Self.day; $0.autoRenewEnabled = false },
             "Active, paid through 8 Dec 2026; will not renew: the customer turned auto-renew off."),
            (Self.snapshot(.gracePeriod) { $0.expiresDate = d1 + Self.day; $0.gracePeriodExpiresDate = d1 + 7 * Self.day },
             "In billing retry since 2 Dec 2026, access kept by the grace period until 8 Dec 2026."),
            (Self.snapshot(.billingRetry) { $0.expiresDate = d1 + Self.day },
             "No access: Apple has been retrying the charge since 2 Dec 2026 (billing retry, no grace period left)."),
            (Self.snapshot(.expired) { $0.expiresDate = d1; $0.expirationIntent = 2 }, "No access: expired on 1 Dec 2026 (a billing error)."),
            (Self.snapshot(.refunded) { $0.revocationDate = d1 + 2 * Self.day; $0.revocationPercentage = 50_000 },
             "No access: refunded on 3 Dec 2026, 50% of it."),
            (Self.snapshot(.migrated) { $0.migratedToOriginalTransactionId = "2000" },
             "No access from this purchase: it was migrated to 2000, which grants it now."),
        ]
        for (snapshot, expected) in cases {
            #expect(AccessExplanation.sentence(for: snapshot, now: now) == expected, "\(snapshot.state)")
        }
        let active = Self.snapshot(.active) { $0.expiresDate = d1 + 7 * Self.day; $0.autoRenewEnabled = true }
        let withdrawn = ConsentRestriction(appTransactionId: "a1", rescindedAt: d1)
        let sentence = AccessExplanation.sentence(for: active, restriction: withdrawn, pendingExtension: d1 + 14 * Self.day, now: now)
        #expect(sentence.contains("A renewal-date extension to 15 Dec 2026 is pending"), "\(sentence)")
        #expect(sentence.contains("withdrew consent on 1 Dec 2026"), "\(sentence)")
        // An extension already reflected in the state is not pending.
        #expect(!AccessExplanation.sentence(for: active, pendingExtension: d1 + 7 * Self.day, now: now).contains("pending"))
    }

    @Test("found by originalTransactionId or by appAccountToken in any case; the timeline merges every source, newest first", arguments: StoreKind.available)
    func profile(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let d1 = Self.december1
        let token = try #require(AppAccountToken("5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6F"))
        try store.withTransaction { transaction in
            try transaction.save(Self.snapshot(.active) {
                $0.entitled = true
                $0.expiresDate = d1 + 30 * Self.day
                $0.autoRenewEnabled = true
                $0.appAccountToken = token
                $0.appTransactionId = "a1"
            })
            try transaction.save(ConsentRestriction(appTransactionId: "a1", rescindedAt: d1 + 3 * Self.day))
            try transaction.save(ConsumptionRequestRecord(
                transactionId: "1001", originalTransactionId: "1000", reason: "UNINTENDED_PURCHASE", requestedAt: d1 + Self.day,
                receivedAt: d1 + Self.day))
        }
        _ = try store.recordRetentionOffer(RetentionOfferRecord(
            requestIdentifier: "r1", originalTransactionId: "1000", environment: "Sandbox", productId: "pro.monthly", result: "answered",
            reason: "win-back", kind: "promotional_offer", answeredAt: d1 + 2 * Self.day, response: "{}"))
        var action = SupportActionRecord(
            requestIdentifier: "x1", actor: "ana", action: "extend", originalTransactionId: "1000", parameters: "{}", at: d1 + 4 * Self.day)
        _ = try store.beginSupportAction(action)
        action.status = .done
        action.answer = #"{"effectiveDate":\#(d1 + 37 * Self.day),"success":true}"#
        try store.finishSupportAction(action)

        let now = d1 + 5 * Self.day
        let byPurchase = try #require(try CustomerProfile.find("1000", in: store, now: now))
        #expect(byPurchase.matchedBy == "originalTransactionId" && byPurchase.purchases.map(\.originalTransactionId) == ["1000"])
        let why = try #require(byPurchase.purchases.first?.why)
        #expect(why.hasPrefix("Active, paid through 31 Dec 2026") && why.contains("extension to 7 Jan 2027 is pending"), "\(why)")
        #expect(why.contains("withdrew consent"), "\(why)")
        #expect(byPurchase.timeline.map(\.kind) == ["operator_action", "consent_withdrawn", "retention_answer", "refund_question"], "\(kind)")
        #expect(byPurchase.timeline.first?.summary == "ana: extend (done)")

        let byToken = try #require(try CustomerProfile.find("5e1f7c2a-0d3b-4c8e-9a61-7f2b3c4d5e6f", in: store, now: now))
        #expect(byToken.matchedBy == "appAccountToken" && byToken.purchases.count == 1)
        let byApp = try #require(try CustomerProfile.find("a1", in: store, now: now))
        #expect(byApp.matchedBy == "appTransactionId" && byApp.purchases.map(\.originalTransactionId) == ["1000"])
        #expect(try CustomerProfile.find("9999", in: store, now: now) == nil)
        #expect(try CustomerProfile.find("  ", in: store, now: now) == nil)
    }
}

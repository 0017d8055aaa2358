import AppStoreModels
import Foundation
import SignetCore
import SignetState
import SignetStateTestSupport
import Testing

/// What the customer did after a retention answer, told by the purchase's ordinary
/// notifications through `transition` (``RetentionOutcomeRule``), in the notification's own
/// commit; and the report that counts it. Every durable store and the memory store.
@Suite struct RetentionOutcomeTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    func bought(_ otid: String, at start: Int64) -> VerifiedPayload {
        F.notification(
            .subscribed, .initialBuy, uuid: "buy-\(otid)", signed: start,
            transaction: F.transaction(otid: otid, id: otid, purchase: start, expires: start + 30 * day, signed: start),
            renewal: F.renewal(otid: otid, signed: start))
    }

    func renewal(_ type: NotificationType, _ subtype: Subtype?, _ otid: String, uuid: String, at signed: Int64, autoRenew: Bool = true) -> VerifiedPayload {
        F.notification(
            type, subtype, uuid: uuid, signed: signed,
            transaction: F.transaction(otid: otid, id: otid, purchase: t0, expires: t0 + 30 * day, signed: signed),
            renewal: F.renewal(otid: otid, autoRenew: autoRenew, signed: signed))
    }

    func answer(_ id: String, _ otid: String, at answeredAt: Int64, rule: String?) -> RetentionOfferRecord {
        RetentionOfferRecord(
            requestIdentifier: id, originalTransactionId: otid, environment: "Production", productId: "pro.monthly",
            result: rule == nil ? "default" : "answered", reason: rule ?? "no_rule", kind: rule == nil ? "message" : "promotional_offer",
            answeredAt: answeredAt, response: "{}")
    }

    @Test(arguments: StoreKind.available)
    func renewalTurnedOffAfterAnAnswerIsLostAndTheEarliestDecidingNotificationWins(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([bought("k1", at: t0), bought("k2", at: t0)])
        _ = try store.recordRetentionOffer(answer("a-1", "k1", at: t0 + day, rule: "win-back"))
        _ = try store.recordRetentionOffer(answer("a-2", "k2", at: t0 + day, rule: nil))

        // Says nothing of staying: no outcome.
        _ = try await harness.runEach([renewal(.didFailToRenew, nil, "k1", uuid: "n-fail", at: t0 + 2 * day)])
        #expect(try store.retentionOffer(requestIdentifier: "a-1")?.outcome == nil, "\(kind)")

        // Renewal turned on arrives first, but the customer had turned it off earlier: lost.
        _ = try await harness.runEach([
            renewal(.didChangeRenewalStatus, .autoRenewEnabled, "k1", uuid: "n-on", at: t0 + 4 * day),
            renewal(.didChangeRenewalStatus, .autoRenewDisabled, "k1", uuid: "n-off", at: t0 + 3 * day, autoRenew: false),
        ])
        let lost = try #require(try store.retentionOffer(requestIdentifier: "a-1")?.outcome, "\(kind)")
        #expect(!lost.kept && lost.notificationType == "DID_CHANGE_RENEWAL_STATUS" && lost.subtype == "AUTO_RENEW_DISABLED", "\(kind)")
        #expect(lost.signedAt == t0 + 3 * day, "\(kind)")
        #expect(try store.retentionOffer(requestIdentifier: "a-2")?.outcome == nil, "\(kind): another purchase")

        // The default's customer redeemed an offer: kept.
        _ = try await harness.runEach([renewal(.offerRedeemed, nil, "k2", uuid: "n-redeem", at: t0 + 2 * day)])
        #expect(try store.retentionOffer(requestIdentifier: "a-2")?.outcome?.kept == true, "\(kind)")

        // A later request about k1 is decided by what came after it.
        _ = try store.recordRetentionOffer(answer("a-3", "k1", at: t0 + 5 * day, rule: "win-back"))
        _ = try await harness.runEach([renewal(.didRenew, nil, "k1", uuid: "n-renew", at: t0 + 6 * day)])
        #expect(try store.retentionOffer(requestIdentifier: "a-3")?.outcome?.notificationType == "DID_RENEW", "\(kind)")
        #expect(try store.retentionOffer(requestIdentifier: "a-1")?.outcome == lost, "\(kind)")

        // The report: requests, answers by kind and rule, kept against lost, the default as the baseline.
        let json = try StateJSON.retentionReport(since: 0, in: store, at: t0 + 7 * day)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        #expect(report["requests"] as? Int == 3, "\(kind): \(report)")
        #expect(report["answeredByKind"] as? [String: Int] == ["promotional_offer": 2], "\(kind)")
        #expect(report["defaultsByReason"] as? [String: Int] == ["no_rule": 1], "\(kind)")
        let rules = try #require(report["rules"] as? [String: [String: Int]])
        #expect(rules["win-back"] == ["answers": 2, "kept": 1, "lost": 1, "undecided": 0], "\(kind): \(rules)")
        #expect(report["defaultMessage"] as? [String: Int] == ["answers": 1, "kept": 1, "lost": 0, "undecided": 0], "\(kind)")
        #expect(report["truncated"] as? Bool == false && report["since"] as? Int == 0, "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func theRenewalInfosRecentSubscriptionStartIsKeptForTenure(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let start = t0 - 400 * day
        let transaction = F.transaction(otid: "t1", id: "t1", purchase: t0, expires: t0 + 30 * day, signed: t0)
        _ = try await harness.runEach([F.notification(
            .subscribed, .resubscribe, uuid: "n-1", signed: t0, transaction: transaction,
            renewal: F.renewal(otid: "t1", signed: t0, recentStart: start))])
        #expect(try store.subscription(originalTransactionId: "t1")?.recentSubscriptionStartDate == start, "\(kind)")
        // A later renewal info without it (an older payload): the run goes on.
        _ = try await harness.runEach([renewal(.didChangeRenewalStatus, .autoRenewDisabled, "t1", uuid: "n-2", at: t0 + day, autoRenew: false)])
        #expect(try store.subscription(originalTransactionId: "t1")?.recentSubscriptionStartDate == start, "\(kind)")
        // A new run (a lapse of 60 days or more): the new start.
        _ = try await harness.runEach([F.notification(
            .didChangeRenewalStatus, .autoRenewEnabled, uuid: "n-3", signed: t0 + 2 * day, transaction: transaction,
            renewal: F.renewal(otid: "t1", signed: t0 + 2 * day, recentStart: t0))])
        #expect(try store.subscription(originalTransactionId: "t1")?.recentSubscriptionStartDate == t0, "\(kind)")
    }

    @Test("the rule: which notifications decide, and how")
    func rule() {
        func outcome(_ type: NotificationType, _ subtype: Subtype? = nil) -> Bool? {
            RetentionOutcomeRule.outcome(of: TransitionInput(renewal(type, subtype, "x", uuid: "u", at: t0)))?.kept
        }
        #expect(outcome(.didChangeRenewalStatus, .autoRenewEnabled) == true)
        #expect(outcome(.didChangeRenewalStatus, .autoRenewDisabled) == false)
        #expect(outcome(.didChangeRenewalPref, .downgrade) == true)
        #expect(outcome(.offerRedeemed) == true)
        #expect(outcome(.didRenew) == true)
        #expect(outcome(.expired, .voluntary) == false)
        #expect(outcome(.didFailToRenew) == nil)
        #expect(outcome(.refund) == nil)
        #expect(outcome(.didChangeRenewalStatus) == nil)
    }
}

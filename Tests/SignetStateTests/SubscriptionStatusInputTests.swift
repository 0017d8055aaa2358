import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

/// Apple's current status of a purchase (an item of Get All Subscription Statuses) as an
/// input of the state machine: authoritative for what it shows, ordered against notifications
/// by its signedDate, silent where the state already agrees.
@Suite(.serialized) struct SubscriptionStatusInputTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    /// Runs `body` on every store, each already holding the purchase Signet saw start (SUBSCRIBED
    /// at t0, 30 days), and closes the store afterwards (a PostgreSQL store holds connections).
    func withHarnesses(_ body: (StateHarness, any StoreRoles) async throws -> Void) async throws {
        for factory in StoreFactory.all {
            let store = try await factory.make()
            defer { try? store.close() }
            let harness = StateHarness(store: store)
            #expect(try await harness.runEach([Table.subscribed]).map(\.type) == ["granted"])
            try await body(harness, store)
        }
    }

    @Test func aRenewalSignetNeverHeardOfIsApplied() async throws {
        let status = F.status(
            F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 35 * day),
            F.renewal(signed: t0 + 35 * day), status: 1)
        try await withHarnesses { (harness, store) async throws in
            let events = try await harness.runEach([status])
            #expect(events.map(\.type) == ["renewed"])
            #expect(events.first?.json["source"] as? String == "subscription_status")
            #expect(events.first?.json["transactionId"] as? String == "2000")
            let snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
            #expect(snapshot.state == .active && snapshot.transactionId == "2000")
            // The same view again, even signed later: nothing to say.
            let again = F.status(
                F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 36 * day),
                F.renewal(signed: t0 + 36 * day), status: 1)
            #expect(try await harness.runEach([status, again]).isEmpty)
        }
    }

    @Test func refundExpiryGraceAndBillingRetryEachGiveTheirEvent() async throws {
        // Every difference is an event: a refund or expiry that also turned auto-renew off says both.
        let cases: [([String], VerifiedPayload)] = [
            (["refunded", "auto_renew_disabled"], F.status(
                F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day, revoked: t0 + 9 * day,
                              revocationType: .refundFull),
                F.renewal(autoRenew: false, signed: t0 + 10 * day), status: 5)),
            (["expired", "auto_renew_disabled"], F.status(
                F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 40 * day),
                F.renewal(autoRenew: false, signed: t0 + 40 * day, expirationIntent: 1), status: 2)),
            (["grace_period_entered"], F.status(
                F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 31 * day),
                F.renewal(signed: t0 + 31 * day, billingRetry: true, graceEnds: t0 + 36 * day), status: 4)),
            (["billing_retry_entered"], F.status(
                F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 31 * day),
                F.renewal(signed: t0 + 31 * day, billingRetry: true), status: 3)),
        ]
        for (expected, status) in cases {
            try await withHarnesses { (harness, _) async throws in
                let events = try await harness.runEach([status])
                #expect(events.map(\.type) == expected, "\(expected)")
                #expect(try await harness.runEach([status]).isEmpty, "a second reconcile of \(expected) emits nothing")
            }
        }
    }

    @Test func aViewThatAgreesSaysNothing() async throws {
        let unchanged = F.status(
            F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day),
            F.renewal(signed: t0 + 10 * day), status: 1)
        try await withHarnesses { (harness, store) async throws in
            #expect(try await harness.runEach([unchanged]).isEmpty)
            #expect(try store.subscription(originalTransactionId: "1000")?.state == .active)
        }
    }

    @Test func aStatusOlderThanAnAppliedNotificationChangesNothing() async throws {
        let renew = F.notification(
            .didRenew, uuid: "dr", signed: t0 + 30 * day,
            transaction: F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewal: F.renewal(signed: t0 + 30 * day))
        // Fetched before the renewal (signed at t0 + 29 days), processed after it.
        let stale = F.status(
            F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 29 * day),
            F.renewal(signed: t0 + 29 * day, billingRetry: true), status: 3)
        try await withHarnesses { (harness, store) async throws in
            #expect(try await harness.runEach([renew]).map(\.type) == ["renewed"])
            #expect(try await harness.runEach([stale]).isEmpty)
            let snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
            #expect(snapshot.state == .active && snapshot.transactionId == "2000")
        }
    }

    @Test func aPurchaseNeverSeenIsSeeded() async throws {
        let seed = F.status(
            F.transaction(otid: "7000", id: "7001", purchase: t0, expires: t0 + 30 * day, signed: t0 + 2 * day),
            F.renewal(otid: "7000", signed: t0 + 2 * day), status: 1)
        for factory in StoreFactory.all {
            let store = try await factory.make()
            defer { try? store.close() }
            let events = try await StateHarness(store: store).runEach([seed])
            #expect(events.map(\.type) == ["granted"])
            #expect(try store.subscription(originalTransactionId: "7000")?.entitled == true)
        }
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
@testable import SignetState
import SignetStateTestSupport
import Testing

/// Multiseat purchases (App Store Server API 1.22): an organization assigns seats
/// (`inAppOwnershipType` ASSIGNED) and its administrator revokes them (REVOKE with
/// `revocationType` ASSIGNMENT_REVOKE). A revoked seat is `revoked`, not `refunded`
/// (developer.apple.com/documentation/appstoreservernotifications/revocationtype).
@Suite struct AssignedSeatTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    /// The first purchase of `otid` at t0, a 30-day period.
    func bought(_ otid: String, uuid: String, ownership: InAppOwnershipType = .purchased) -> VerifiedPayload {
        F.notification(
            .subscribed, .initialBuy, uuid: uuid, signed: t0,
            transaction: F.transaction(otid: otid, id: otid, purchase: t0, expires: t0 + 30 * day, signed: t0, ownership: ownership),
            renewal: F.renewal(otid: otid, signed: t0))
    }

    @Test(arguments: StoreKind.available)
    func aRevokedSeatIsRevokedNotRefunded(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let granted = try await harness.runEach([bought("s1", uuid: "seat-1", ownership: .assigned)])
        #expect(granted.map(\.type) == ["granted"], "\(kind)")
        #expect(granted.first?.json["ownership"] as? String == "ASSIGNED", "\(kind)")
        // The entitlement API's answer says it too: an app can tell an assigned seat from a purchase.
        let answer = try StateJSON.entitlements(.originalTransactionId("s1"), in: store, at: t0 + day)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(answer)) as? [[String: Any]])
        #expect(rows.first?["ownership"] as? String == "ASSIGNED", "\(kind): \(rows)")

        let revoke = F.notification(
            .revoke, uuid: "seat-2", signed: t0 + 3 * day,
            transaction: F.transaction(
                otid: "s1", id: "s1", purchase: t0, expires: t0 + 30 * day, signed: t0 + 3 * day, ownership: .assigned,
                revoked: t0 + 3 * day, revocationType: .assignmentRevoke))
        let revoked = try await harness.runEach([revoke])
        #expect(revoked.map(\.type) == ["revoked"], "\(kind)")
        #expect(revoked.first?.entitled == false, "\(kind)")
        #expect(revoked.first?.json["revocationType"] as? String == "ASSIGNMENT_REVOKE", "\(kind)")
        #expect(try store.subscription(originalTransactionId: "s1")?.state == .revoked, "\(kind)")

        // A full refund of another purchase stays `refunded`.
        let refunded = try await harness.runEach([
            bought("p1", uuid: "p-1"),
            F.notification(
                .refund, uuid: "p-2", signed: t0 + day,
                transaction: F.transaction(
                    otid: "p1", id: "p1", purchase: t0, expires: t0 + 30 * day, signed: t0 + day, revoked: t0 + day,
                    revocationType: .refundFull)),
        ])
        #expect(refunded.map(\.type) == ["granted", "refunded"], "\(kind)")
        #expect(refunded.last?.json["revocationPercentage"] is NSNull, "\(kind)")
    }

    /// REFUND_PRORATED (2025-12): access ends like any refund, and the event and the stored
    /// purchase carry Apple's revocationPercentage, so a consumer can tell a prorated refund.
    @Test(arguments: StoreKind.available)
    func aProratedRefundCarriesItsPercentage(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        var prorated = F.transaction(
            otid: "q1", id: "q1", purchase: t0, expires: t0 + 30 * day, signed: t0 + day, revoked: t0 + day,
            revocationType: .refundProrated)
        prorated.revocationPercentage = 37_500
        let events = try await harness.runEach([
            bought("q1", uuid: "q-1"),
            F.notification(.refund, uuid: "q-2", signed: t0 + day, transaction: prorated),
        ])
        #expect(events.map(\.type) == ["granted", "refunded"], "\(kind)")
        #expect(events.last?.json["revocationType"] as? String == "REFUND_PRORATED", "\(kind)")
        #expect(events.last?.json["revocationPercentage"] as? Int == 37_500, "\(kind)")
        #expect(try store.subscription(originalTransactionId: "q1")?.revocationPercentage == 37_500, "\(kind): stored")
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
@testable import SignetState
import SignetStateTestSupport
import Testing

/// MIGRATION (App Store Server Notifications 2.16, Advanced Commerce's Migrate a Subscription):
/// the subscription continues under a new originalTransactionId whose transaction names the old
/// one as `previousOriginalTransactionId`
/// (developer.apple.com/documentation/appstoreservernotifications/previousoriginaltransactionid).
/// The old purchase must end when the new one begins, or the customer holds two entitlements.
@Suite struct MigrationTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    func subscribed(_ otid: String, uuid: String, at start: Int64) -> VerifiedPayload {
        F.notification(
            .subscribed, .initialBuy, uuid: uuid, signed: start,
            transaction: F.transaction(otid: otid, id: otid, purchase: start, expires: start + 30 * day, signed: start),
            renewal: F.renewal(otid: otid, signed: start))
    }

    /// The new purchase `new`, migrated from `old`, starting at `start`.
    func migration(_ new: String, from old: String, uuid: String, at start: Int64) -> VerifiedPayload {
        var moved = F.transaction(otid: new, id: new, purchase: start, expires: start + 30 * day, signed: start)
        moved.previousOriginalTransactionId = old
        return F.notification(.migration, uuid: uuid, signed: start, transaction: moved, renewal: F.renewal(otid: new, signed: start))
    }

    @Test(arguments: StoreKind.available)
    func theOldPurchaseEndsWhenTheNewOneBegins(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([subscribed("old1", uuid: "m-1", at: t0)])

        let events = try await harness.runEach([migration("new1", from: "old1", uuid: "m-2", at: t0 + 5 * day)])
        // The new purchase's grant, then the old one's end, both caused by the MIGRATION.
        #expect(events.map(\.type) == ["granted", "migrated"], "\(kind)")
        #expect(events.first?.json["originalTransactionId"] as? String == "new1", "\(kind)")
        #expect(events.first?.json["previousOriginalTransactionId"] as? String == "old1", "\(kind)")
        let ended = try #require(events.last, "\(kind)")
        #expect(ended.json["originalTransactionId"] as? String == "old1", "\(kind)")
        #expect(ended.json["migratedToOriginalTransactionId"] as? String == "new1", "\(kind)")
        #expect(ended.state == "migrated" && !ended.entitled, "\(kind)")
        #expect(ended.json["previousState"] as? String == "active", "\(kind)")
        #expect(ended.headers["signet-event-type"] == "migrated", "\(kind): \(ended.headers)")

        // One entitlement, not two, while both periods would still run.
        let now = t0 + 6 * day
        let old = try #require(try store.entitlements(originalTransactionId: "old1", at: now).first)
        let new = try #require(try store.entitlements(originalTransactionId: "new1", at: now).first)
        #expect(old.state == .migrated && !old.entitled && old.migratedToOriginalTransactionId == "new1", "\(kind): \(old)")
        #expect(new.state == .active && new.entitled && new.previousOriginalTransactionId == "old1", "\(kind): \(new)")
        // The history of either names the other.
        for (id, key, other) in [("old1", "migratedToOriginalTransactionId", "new1"), ("new1", "previousOriginalTransactionId", "old1")] {
            let history = try #require(try StateJSON.history(id, in: store))
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(history)) as? [String: Any])
            #expect(answer[key] as? String == other, "\(kind) \(id): \(answer)")
        }
        // Never stale for reconcile: Apple will not renew it, the new purchase renews instead.
        let stale = try store.staleSubscriptions(endedAfter: t0, endedBefore: t0 + 40 * day, after: nil, limit: 10).map(\.originalTransactionId)
        #expect(stale == ["new1"], "\(kind): \(stale)")
        // Nothing is due for the expiry sweep: a migrated purchase has no boundary left.
        #expect(try await harness.sweep(at: t0 + 31 * day).allSatisfy { $0.json["originalTransactionId"] as? String != "old1" }, "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func aLateRenewalOfTheOldPurchaseDoesNotBringItBack(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([
            subscribed("old2", uuid: "l-1", at: t0), migration("new2", from: "old2", uuid: "l-2", at: t0 + 31 * day),
        ])
        // The old purchase's renewal, signed before the migration, delivered after it.
        let renewal = F.notification(
            .didRenew, uuid: "l-3", signed: t0 + 30 * day,
            transaction: F.transaction(otid: "old2", id: "old2-r1", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewal: F.renewal(otid: "old2", signed: t0 + 30 * day))
        #expect(try await harness.runEach([renewal]).isEmpty, "\(kind)")
        let old = try #require(try store.subscription(originalTransactionId: "old2"))
        #expect(old.state == .migrated && !old.entitled, "\(kind): \(old)")
        #expect(try store.entitlements(originalTransactionId: "old2", at: t0 + 32 * day).first?.entitled == false, "\(kind)")

        // The MIGRATION again (Apple retries with the same notificationUUID, or sends another
        // notification of the new purchase naming the old one): no second `migrated`.
        var again = F.transaction(otid: "new2", id: "new2", purchase: t0 + 31 * day, expires: t0 + 61 * day, signed: t0 + 33 * day)
        again.previousOriginalTransactionId = "old2"
        let later = try await harness.runEach([
            migration("new2", from: "old2", uuid: "l-2", at: t0 + 31 * day),
            F.notification(.didChangeRenewalStatus, .autoRenewDisabled, uuid: "l-4", signed: t0 + 33 * day, transaction: again,
                           renewal: F.renewal(otid: "new2", autoRenew: false, signed: t0 + 33 * day)),
        ])
        #expect(later.map(\.type) == ["auto_renew_disabled"], "\(kind)")
    }

    /// The new purchase arrives before Signet ever saw the old one: the old one is recorded as
    /// migrated at once, so its own notifications, arriving later, grant nothing.
    @Test(arguments: StoreKind.available)
    func theOldPurchaseArrivingAfterTheMigrationGrantsNothing(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let first = try await harness.runEach([migration("new3", from: "old3", uuid: "o-1", at: t0 + 5 * day)])
        #expect(first.map(\.type) == ["granted"], "\(kind)")
        #expect(try await harness.runEach([subscribed("old3", uuid: "o-2", at: t0)]).isEmpty, "\(kind)")
        let old = try #require(try store.entitlements(originalTransactionId: "old3", at: t0 + 6 * day).first)
        #expect(old.state == .migrated && !old.entitled && old.migratedToOriginalTransactionId == "new3", "\(kind): \(old)")
        #expect(old.productId == "pro.monthly", "\(kind): what arrived later is kept: \(old)")
    }

    /// A purchase of the other environment is never ended by a migration (Apple's ids do not repeat
    /// across environments: that is no migration of it).
    @Test(arguments: StoreKind.available)
    func aPurchaseOfAnotherEnvironmentIsNotEnded(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let sandbox = F.notification(
            .subscribed, .initialBuy, uuid: "e-1", signed: t0,
            transaction: F.transaction(otid: "old4", id: "old4", purchase: t0, expires: t0 + 30 * day, signed: t0, environment: .sandbox))
        _ = try await harness.runEach([sandbox])
        let events = try await harness.runEach([migration("new4", from: "old4", uuid: "e-2", at: t0 + day)])
        #expect(events.map(\.type) == ["granted"], "\(kind)")
        #expect(try store.subscription(originalTransactionId: "old4")?.state == .active, "\(kind)")
    }
}

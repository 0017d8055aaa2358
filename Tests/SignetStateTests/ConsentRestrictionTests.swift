import AppStoreModels
import Foundation
import SignetCore
@testable import SignetJWS
@testable import SignetState
import SignetStateTestSupport
import Testing

/// RESCIND_CONSENT (2025): a parent or guardian withdrew consent for a child's use of the app.
/// Apple sends `appData` with the app transaction and no purchase; every purchase made in that
/// download of the app (its `appTransactionId`) answers `restricted: true`, entitlements
/// otherwise unchanged, until the backend clears it or a later notification about it arrives.
@Suite struct ConsentRestrictionTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    /// A purchase made in app download `app`.
    func bought(_ otid: String, app: String?, uuid: String, at start: Int64) -> VerifiedPayload {
        var transaction = F.transaction(otid: otid, id: otid, purchase: start, expires: start + 30 * day, signed: start)
        transaction.appTransactionId = app
        return F.notification(.subscribed, .initialBuy, uuid: uuid, signed: start, transaction: transaction, renewal: F.renewal(otid: otid, signed: start))
    }

    func rescind(_ app: String?, uuid: String, at signed: Int64) -> VerifiedPayload {
        F.rescindConsent(app, uuid: uuid, signed: signed)
    }

    func restricted(_ otid: String, in store: any StoreRoles, at instant: Int64) throws -> (restricted: Bool, entitled: Bool)? {
        try store.entitlements(originalTransactionId: otid, at: instant).first.map { ($0.restricted, $0.entitled) }
    }

    @Test(arguments: StoreKind.available)
    func aRescindRestrictsEveryPurchaseOfTheDownloadUntilCleared(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([
            bought("c1", app: "app-1", uuid: "c-1", at: t0), bought("c2", app: "app-1", uuid: "c-2", at: t0),
            bought("c3", app: "app-2", uuid: "c-3", at: t0),
        ])
        #expect(try restricted("c1", in: store, at: t0 + day)?.restricted == false, "\(kind)")

        let events = try await harness.runEach([rescind("app-1", uuid: "r-1", at: t0 + 2 * day)])
        #expect(events.map(\.type) == ["consent_rescinded"], "\(kind)")
        let event = try #require(events.first)
        #expect(event.json["appTransactionId"] as? String == "app-1", "\(kind)")
        #expect(event.json["originalTransactionId"] is NSNull && event.json["state"] is NSNull && !event.entitled, "\(kind)")
        #expect(event.headers.isEmpty == false, "\(kind)")

        // Restricted, entitlements otherwise unchanged; another download is not.
        for otid in ["c1", "c2"] {
            let answer = try #require(try restricted(otid, in: store, at: t0 + 3 * day))
            #expect(answer.restricted && answer.entitled, "\(kind) \(otid)")
        }
        #expect(try restricted("c3", in: store, at: t0 + 3 * day)?.restricted == false, "\(kind)")
        // The API's JSON says it too.
        let json = try StateJSON.entitlements(.originalTransactionId("c1"), in: store, at: t0 + 3 * day)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [[String: Any]])
        #expect(rows.first?["restricted"] as? Bool == true, "\(kind): \(rows)")

        // The backend clears it; a RESCIND_CONSENT signed before the clearing (a retry with
        // another uuid, a late delivery) does not restrict again, a later one does.
        let cleared = try #require(try store.clearConsentRestriction(appTransactionId: "app-1", by: "test", at: t0 + 4 * day))
        #expect(!cleared.isInForce && cleared.clearedBy == "test", "\(kind)")
        #expect(try restricted("c1", in: store, at: t0 + 5 * day)?.restricted == false, "\(kind)")
        #expect(try await harness.runEach([rescind("app-1", uuid: "r-2", at: t0 + 3 * day)]).isEmpty, "\(kind)")
        #expect(try restricted("c2", in: store, at: t0 + 5 * day)?.restricted == false, "\(kind)")
        #expect(try await harness.runEach([rescind("app-1", uuid: "r-3", at: t0 + 6 * day)]).map(\.type) == ["consent_rescinded"], "\(kind)")
        #expect(try restricted("c2", in: store, at: t0 + 7 * day)?.restricted == true, "\(kind)")
        #expect(try store.clearConsentRestriction(appTransactionId: "unknown", by: "test", at: t0) == nil, "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func aLaterNotificationOfTheDownloadLiftsTheRestriction(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([bought("d1", app: "app-3", uuid: "d-1", at: t0), rescind("app-3", uuid: "d-2", at: t0 + day)])
        // Signed before the rescind: changes nothing about consent.
        var older = F.transaction(otid: "d1", id: "d1", purchase: t0, expires: t0 + 30 * day, signed: t0 + day / 2)
        older.appTransactionId = "app-3"
        let early = try await harness.runEach([
            F.notification(.didChangeRenewalStatus, .autoRenewDisabled, uuid: "d-3", signed: t0 + day / 2, transaction: older,
                           renewal: F.renewal(otid: "d1", autoRenew: false, signed: t0 + day / 2)),
        ])
        #expect(!early.map(\.type).contains("consent_cleared"), "\(kind): \(early.map(\.type))")
        #expect(try restricted("d1", in: store, at: t0 + 2 * day)?.restricted == true, "\(kind)")

        // Signed after it: lifted, with an event, before the purchase's own.
        var later = F.transaction(otid: "d1", id: "d1-r", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day)
        later.appTransactionId = "app-3"
        let renewed = try await harness.runEach([
            F.notification(.didRenew, uuid: "d-4", signed: t0 + 30 * day, transaction: later, renewal: F.renewal(otid: "d1", signed: t0 + 30 * day)),
        ])
        #expect(renewed.first?.type == "consent_cleared", "\(kind): \(renewed.map(\.type))")
        #expect(try restricted("d1", in: store, at: t0 + 31 * day)?.restricted == false, "\(kind)")
        #expect(try store.consentRestriction(appTransactionId: "app-3")?.clearedBy == "notification d-4", "\(kind)")
    }

    /// Without an appTransactionId nothing can be restricted: the record is dead-lettered with a
    /// reason, not silently dropped.
    @Test(arguments: StoreKind.available)
    func aRescindWithoutAnAppTransactionIsRejected(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let result = try await StateHarness(store: store).run([rescind(nil, uuid: "n-1", at: t0)])
        #expect(result.rejected.map(\.reason) == [.missingTransaction], "\(kind)")
        #expect(result.events.isEmpty, "\(kind)")
    }
}

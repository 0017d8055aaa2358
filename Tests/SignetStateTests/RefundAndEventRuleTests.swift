import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

/// Issue 11 §3-4: refunds of an older period judged by Apple's signed status and renewal
/// info, and events that say one thing. Every test runs on each store.
@Suite struct RefundAndEventRuleTests {
    typealias F = Fixture
    static let t0 = Fixture.t0, day = Fixture.day
    static let firstEnd = t0 + 30 * day, secondEnd = t0 + 60 * day

    /// REFUND of the first period, signed after the renewal Signet never saw.
    static func refundOfFirst(status: SubscriptionStatus?, renewalDate: Int64?, uuid: String = "refund-1") -> VerifiedPayload {
        F.notification(
            .refund, uuid: uuid, signed: t0 + 40 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: firstEnd, signed: t0 + 40 * day,
                                       revoked: t0 + 40 * day, revocationType: .refundFull),
            renewal: F.renewal(signed: t0 + 40 * day, renewalDate: renewalDate), status: status)
    }

    @Test(arguments: StoreFactory.all)
    func refundOfAnOlderPeriodWhoseRenewalWasLostKeepsTheCurrentPeriod(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed])
        // DID_RENEW (t0+30d) is lost. Apple's REFUND of the first period says: status active,
        // the most recent purchase expires at t0+60d.
        let events = try await harness.runEach([Self.refundOfFirst(status: .active, renewalDate: Self.secondEnd)])
        #expect(events.map(\.type) == ["renewed"], "a later period Signet had not seen, not a revocation")
        let event = try #require(events.first)
        #expect(event.state == "active" && event.entitled)
        #expect(event.json["expiresDate"] as? Int64 == Self.secondEnd)
        #expect(event.json["expiresDateSource"] as? String == "renewal_info")
        #expect(event.json["revocationDate"] is NSNull)
        let snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
        #expect(snapshot.state == .active && snapshot.revocationDate == nil && snapshot.periodEnd == Self.secondEnd)
        // It lasts until the renewal info's date, then ends by time.
        #expect(try store.entitlements(originalTransactionId: "1000", at: Self.t0 + 59 * Self.day).first?.entitled == true)
        #expect(try await harness.sweep(at: Self.t0 + 59 * Self.day).isEmpty)
        #expect(try await harness.sweep(at: Self.secondEnd + Self.day).map(\.type) == ["expired"])
    }

    @Test(arguments: StoreFactory.all)
    func afterASweepExpiredItTheSameRefundGrantsAgain(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed])
        #expect(try await harness.sweep(at: Self.firstEnd + Self.day).map(\.type) == ["expired"])
        let events = try await harness.runEach([Self.refundOfFirst(status: .active, renewalDate: Self.secondEnd)])
        #expect(events.map(\.type) == ["granted"])
        #expect(events.first?.entitled == true)
    }

    @Test(arguments: StoreFactory.all)
    func refundOfTheCurrentPeriodStillRevokes(_ factory: StoreFactory) async throws {
        // Without evidence of a later period (status revoked, or renewalDate not later, or no
        // status at all) the refunded transaction is the current one.
        let cases: [(SubscriptionStatus?, Int64?)] = [(.revoked, Self.secondEnd), (.active, Self.firstEnd), (nil, Self.secondEnd), (.active, nil)]
        for (index, (status, renewalDate)) in cases.enumerated() {
            let store = try await factory.make()
            defer { try? store.close() }
            let harness = StateHarness(store: store)
            _ = try await harness.runEach([Table.subscribed])
            let events = try await harness.runEach([Self.refundOfFirst(status: status, renewalDate: renewalDate, uuid: "r\(index)")])
            #expect(events.map(\.type).first == "refunded", "status \(String(describing: status)), renewalDate \(String(describing: renewalDate))")
            #expect(try store.subscription(originalTransactionId: "1000")?.state == .refunded)
        }
    }

    // MARK: - Events that say one thing

    /// Applies `history`, then `input`, on a fresh store of `factory`: the input's events.
    static func events(_ factory: StoreFactory, after history: [VerifiedPayload], _ input: VerifiedPayload) async throws -> [PublishedEvent] {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach(history)
        return try await harness.runEach([input])
    }

    @Test(arguments: StoreFactory.all)
    func upgradeDuringGraceSaysRecoveredAndProductChanged(_ factory: StoreFactory) async throws {
        let history: [VerifiedPayload] = [Table.subscribed, Table.failGrace]
        let upgrade = F.notification(
            .didChangeRenewalPref, .upgrade, uuid: "up-grace", signed: Self.t0 + 32 * Self.day,
            transaction: F.transaction(id: "2000", product: "pro.yearly", purchase: Self.t0 + 32 * Self.day, expires: Self.t0 + 397 * Self.day,
                                       signed: Self.t0 + 32 * Self.day),
            renewal: F.renewal(product: "pro.yearly", signed: Self.t0 + 32 * Self.day))
        let events = try await Self.events(factory, after: history, upgrade)
        #expect(events.map(\.type) == ["recovered", "product_changed"])
        #expect(events.allSatisfy { $0.json["productId"] as? String == "pro.yearly" })
        #expect(Set(events.map(\.eventId)).count == 2)
    }

    @Test(arguments: StoreFactory.all)
    func resubscribingToAnotherProductSaysGrantedAndProductChanged(_ factory: StoreFactory) async throws {
        let history: [VerifiedPayload] = [Table.subscribed, Table.disabled, Table.expiredVoluntary]
        let resubscribe = F.notification(
            .subscribed, .resubscribe, uuid: "rs-other", signed: Self.t0 + 40 * Self.day,
            transaction: F.transaction(id: "3000", product: "pro.basic", purchase: Self.t0 + 40 * Self.day, expires: Self.t0 + 70 * Self.day,
                                       signed: Self.t0 + 40 * Self.day),
            renewal: F.renewal(product: "pro.basic", signed: Self.t0 + 40 * Self.day))
        let events = try await Self.events(factory, after: history, resubscribe)
        #expect(events.map(\.type) == ["granted", "product_changed", "auto_renew_enabled"])
        #expect(!events.map(\.type).contains("renewal_preference_changed"))
    }

    @Test(arguments: StoreFactory.all)
    func aNewPaidPeriodAfterARefundIsGrantedNotRestored(_ factory: StoreFactory) async throws {
        let history: [VerifiedPayload] = [Table.subscribed, Table.refund]
        let renew = F.notification(
            .didRenew, uuid: "dr-after-refund", signed: Self.firstEnd,
            transaction: F.transaction(id: "2000", purchase: Self.firstEnd, expires: Self.secondEnd, signed: Self.firstEnd),
            renewal: F.renewal(signed: Self.firstEnd))
        let events = try await Self.events(factory, after: history, renew)
        #expect(events.map(\.type) == ["granted"])
        #expect(events.first?.json["previousState"] as? String == "refunded")
    }

    @Test(arguments: StoreFactory.all)
    func familyAccessSharedAgainIsGranted(_ factory: StoreFactory) async throws {
        let revoke = F.notification(
            .revoke, uuid: "rv", signed: Self.t0 + 3 * Self.day,
            transaction: F.transaction(otid: "f1", id: "f1", purchase: Self.t0, expires: Self.firstEnd, signed: Self.t0 + 3 * Self.day,
                                       ownership: .familyShared, revoked: Self.t0 + 3 * Self.day, revocationType: .familyRevoke))
        let history: [VerifiedPayload] = [Table.familySubscribed, revoke]
        // The organiser shares again: a new family-shared transaction for the member.
        let shared = F.notification(
            .subscribed, .initialBuy, uuid: "fs-again", signed: Self.t0 + 5 * Self.day,
            transaction: F.transaction(otid: "f1", id: "f2", purchase: Self.t0 + 5 * Self.day, expires: Self.t0 + 35 * Self.day,
                                       signed: Self.t0 + 5 * Self.day, ownership: .familyShared),
            renewal: F.renewal(otid: "f1", signed: Self.t0 + 5 * Self.day))
        let events = try await Self.events(factory, after: history, shared)
        #expect(events.map(\.type) == ["granted"])
        #expect(events.first?.json["previousState"] as? String == "revoked")
    }

    @Test(arguments: StoreFactory.all)
    func refundReversedRestoresOnlyWhileThePeriodRuns(_ factory: StoreFactory) async throws {
        let history: [VerifiedPayload] = [Table.subscribed, Table.refund]
        let reversed = F.notification(
            .refundReversed, uuid: "rr-late", signed: Self.t0 + 45 * Self.day,
            transaction: F.transaction(id: "1000", purchase: Self.t0, expires: Self.firstEnd, signed: Self.t0 + 45 * Self.day))
        let events = try await Self.events(factory, after: history, reversed)
        #expect(events.map(\.type) == ["expired"])
        #expect(events.first?.entitled == false && events.first?.json["previousState"] as? String == "refunded")
    }
}

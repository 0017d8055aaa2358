import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

@Suite struct TransitionBehaviourTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    static func stores() async throws -> [any StoreRoles] {
        var stores: [any StoreRoles] = []
        for factory in StoreFactory.all { stores.append(try await factory.make()) }
        return stores
    }

    @Test func sameNotificationThreeTimesHasOneEffect() async throws {
        for store in try await Self.stores() {
            let harness = StateHarness(store: store)
            // Three copies in one batch, then three more in later batches.
            let first = try await harness.run([Table.subscribed, Table.subscribed, Table.subscribed])
            #expect(first.events.map(\.type) == ["granted"])
            #expect(first.dropped == 2)
            for _ in 0..<3 {
                let again = try await harness.run([Table.subscribed])
                #expect(again.events.isEmpty)
                #expect(again.dropped == 1)
            }
        }
    }

    @Test func transitionAloneIsTheAuthoritativeDuplicateCheck() async throws {
        // dedupe saw batch k+1 before transition committed batch k: both copies pass dedupe.
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store, useDedupe: false)
        let first = try await harness.run([Table.subscribed, Table.subscribed])
        let second = try await harness.run([Table.subscribed])
        #expect(first.events.count == 1)
        #expect(first.dropped == 1)
        #expect(second.dropped == 1)
    }

    @Test func olderNotificationArrivingLateNeverRollsBack() async throws {
        let renew = F.notification(
            .didRenew, uuid: "dr", signed: t0 + 30 * day,
            transaction: F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewal: F.renewal(signed: t0 + 30 * day))
        for store in try await Self.stores() {
            let harness = StateHarness(store: store)
            #expect(try await harness.runEach([renew]).map(\.type) == ["granted"])
            // The older ones arrive now: SUBSCRIBED, a failure, an auto-renew toggle.
            let late = try await harness.runEach([Table.subscribed, Table.disabled, Table.failNoGrace])
            #expect(late.isEmpty, "late events: \(late.map(\.type))")
            let snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
            #expect(snapshot.state == .active)
            #expect(snapshot.transactionId == "2000")
            #expect(snapshot.autoRenewEnabled == true)
        }
    }

    @Test func finalStateDoesNotDependOnArrivalOrder() async throws {
        let renew = F.notification(
            .didRenew, uuid: "dr", signed: t0 + 30 * day,
            transaction: F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewal: F.renewal(signed: t0 + 30 * day))
        let inputs = [Table.subscribed, Table.disabled, Table.downgrade, renew]
        var finals: Set<String> = []
        for permutation in Self.permutations(Array(inputs.indices)) {
            let store = InMemoryStateStore()
            _ = try await StateHarness(store: store).runEach(permutation.map { inputs[$0] })
            var snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
            // Diagnostic fields name the newest notification applied; compare the facts.
            snapshot.lastNotificationType = nil; snapshot.lastSubtype = nil; snapshot.lastNotificationUUID = nil
            finals.insert("\(snapshot)")
        }
        #expect(finals.count == 1)
    }

    static func permutations(_ items: [Int]) -> [[Int]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index -> [[Int]] in
            var rest = items
            let head = rest.remove(at: index)
            return permutations(rest).map { [head] + $0 }
        }
    }

    @Test func refundMonthsLaterStillRevokesTheCurrentPeriod() async throws {
        // A yearly subscription refunded four months in.
        let yearly = F.transaction(id: "1000", product: "pro.yearly", purchase: t0, expires: t0 + 365 * day, signed: t0)
        let refund = F.notification(
            .refund, uuid: "late-refund", signed: t0 + 120 * day,
            transaction: F.transaction(id: "1000", product: "pro.yearly", purchase: t0, expires: t0 + 365 * day,
                                       signed: t0 + 120 * day, revoked: t0 + 120 * day, revocationType: .refundFull))
        for store in try await Self.stores() {
            let harness = StateHarness(store: store)
            _ = try await harness.run([F.notification(.subscribed, .initialBuy, uuid: "y", signed: t0, transaction: yearly)])
            let events = try await harness.runEach([refund])
            #expect(events.map(\.type) == ["refunded"])
            #expect(events.first?.json["revocationDate"] as? Int64 == t0 + 120 * day)
            #expect(try store.subscription(originalTransactionId: "1000")?.entitled == false)
            // Even after the period ended, a refund that arrives later still flips expired -> refunded.
        }
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed, Table.expiredVoluntary])
        let late = F.notification(
            .refund, uuid: "very-late", signed: t0 + 200 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 200 * day, revoked: t0 + 200 * day))
        #expect(try await harness.runEach([late]).map(\.type) == ["refunded"])
    }

    @Test func refundOfAnEarlierPeriodLeavesTheCurrentOneAlone() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        let renew = F.notification(
            .didRenew, uuid: "dr", signed: t0 + 30 * day,
            transaction: F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
            renewal: F.renewal(signed: t0 + 30 * day))
        _ = try await harness.runEach([Table.subscribed, renew])
        let oldRefund = F.notification(
            .refund, uuid: "old", signed: t0 + 40 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 40 * day, revoked: t0 + 40 * day))
        #expect(try await harness.runEach([oldRefund]).isEmpty)
        #expect(try store.subscription(originalTransactionId: "1000")?.state == .active)
    }

    @Test func refundReversedRestoresAndALateRefundDoesNotUndoIt() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        let reversed = F.notification(
            .refundReversed, uuid: "rr", signed: t0 + 20 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 20 * day))
        #expect(try await harness.runEach([Table.subscribed, Table.refund, reversed]).map(\.type) == ["granted", "refunded", "restored"])
        // The reversal arrives before the refund: the refund (older) changes nothing.
        let other = InMemoryStateStore()
        let events = try await StateHarness(store: other).runEach([Table.subscribed, reversed, Table.refund])
        #expect(events.map(\.type) == ["granted"])
        #expect(try other.subscription(originalTransactionId: "1000")?.state == .active)
    }

    @Test func familySharingRevokeAndPolicy() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        let granted = try await harness.runEach([Table.familySubscribed])
        #expect(granted.first?.json["ownership"] as? String == "FAMILY_SHARED")
        #expect(granted.first?.entitled == true)
        let revoke = F.notification(
            .revoke, uuid: "rv", signed: t0 + 3 * day,
            // No revocationType: a REVOKE still ends access, as a family revoke.
            transaction: F.transaction(otid: "f1", id: "f1", purchase: t0, expires: t0 + 30 * day, signed: t0 + 3 * day,
                                       ownership: .familyShared, revoked: t0 + 3 * day))
        let revoked = try await harness.runEach([revoke])
        #expect(revoked.map(\.type) == ["revoked"])
        #expect(revoked.first?.json["revocationType"] as? String == "FAMILY_REVOKE")

        var policy = TransitionPolicy()
        policy.familySharedEntitled = false
        let strict = StateHarness(store: InMemoryStateStore(), policy: policy)
        let events = try await strict.runEach([Table.familySubscribed])
        #expect(events.first?.entitled == false)
    }

    @Test func consumablesAreSeparatePurchasesAndCanBeRefunded() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        func buy(_ id: String, at: Int64) -> VerifiedPayload {
            F.notification(.oneTimeCharge, uuid: "buy-\(id)", signed: at,
                           transaction: F.transaction(otid: id, id: id, product: "coins.100", type: .consumable, purchase: at, signed: at))
        }
        let bought = try await harness.runEach([buy("c1", at: t0), buy("c2", at: t0 + 1000)])
        #expect(bought.map(\.type) == ["granted", "granted"])
        #expect(bought.allSatisfy { $0.state == "consumed" && $0.json["productType"] as? String == "Consumable" })
        let refund = F.notification(
            .refund, uuid: "refund-c2", signed: t0 + day,
            transaction: F.transaction(otid: "c2", id: "c2", product: "coins.100", type: .consumable, purchase: t0 + 1000, signed: t0 + day, revoked: t0 + day))
        #expect(try await harness.runEach([refund]).map(\.type) == ["refunded"])
        #expect(try store.subscription(originalTransactionId: "c1")?.state == .consumed)
        #expect(try store.subscription(originalTransactionId: "c2")?.state == .refunded)
    }

    @Test func nonRenewingSubscriptionExpiresByDate() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        let purchase = F.notification(
            .oneTimeCharge, uuid: "nr", signed: t0,
            transaction: F.transaction(otid: "nr1", id: "nr1", product: "season.pass", type: .nonRenewingSubscription,
                                       purchase: t0, expires: t0 + 90 * day, signed: t0))
        #expect(try await harness.runEach([purchase]).map(\.state) == ["active"])
        let now = try store.entitlements(originalTransactionId: "nr1", at: t0 + 91 * day)
        #expect(now.first?.state == .expired)
        #expect(now.first?.entitled == false)
    }

    @Test func unknownNotificationTypesAreKeptAndSurfaced() async throws {
        let store = InMemoryStateStore()
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed])
        let future = F.notification(
            "SOMETHING_NEW", "SHINY", uuid: "future", signed: t0 + 5 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 5 * day, revoked: t0 + 5 * day))
        let events = try await harness.runEach([future])
        #expect(events.map(\.type) == ["unknown_notification"])
        #expect(events.first?.json["notificationType"] as? String == "SOMETHING_NEW")
        #expect(events.first?.state == "active")
        #expect(try store.subscription(originalTransactionId: "1000")?.state == .active)
        // A retry of it is still a retry.
        #expect(try await harness.run([future]).dropped == 1)

        var policy = TransitionPolicy()
        policy.rejectUnknownTypes = true
        let strict = try await StateHarness(store: InMemoryStateStore(), policy: policy).run([future])
        #expect(strict.rejected.map(\.reason) == [SubscriptionStateMachine.unknownTypeReason])
    }

    @Test func missingTransactionIsRejected() async throws {
        let result = try await StateHarness(store: InMemoryStateStore()).run([F.notification(.didRenew, uuid: "x", signed: t0)])
        #expect(result.rejected.map(\.reason) == [.missingTransaction])
    }

    @Test func appForwardedTransactionGrantsOnceBeforeTheNotification() async throws {
        for store in try await Self.stores() {
            let harness = StateHarness(store: store)
            // The app forwards the purchase a moment after it happened (Apple signs it then).
            let forwarded = F.appTransaction(F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 2000))
            let early = try await harness.runEach([forwarded])
            #expect(early.map(\.type) == ["granted"])
            #expect(early.first?.json["source"] as? String == "app_transaction")
            // Apple's SUBSCRIBED (signed at t0) and a re-forward change nothing.
            #expect(try await harness.runEach([Table.subscribed]).isEmpty)
            #expect(try await harness.runEach([forwarded]).isEmpty)
        }
        var policy = TransitionPolicy()
        policy.entitleOnAppTransaction = false
        let waiting = StateHarness(store: InMemoryStateStore(), policy: policy)
        let forwarded = F.appTransaction(F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 2000))
        #expect(try await waiting.runEach([forwarded]).isEmpty)
        #expect(try await waiting.runEach([Table.subscribed]).map(\.type) == ["granted"])
    }

    @Test func billingRetryPolicy() async throws {
        var policy = TransitionPolicy()
        policy.billingRetryEntitled = true
        let events = try await StateHarness(store: InMemoryStateStore(), policy: policy).runEach([Table.subscribed, Table.failNoGrace])
        #expect(events.last?.type == "billing_retry_entered")
        #expect(events.last?.entitled == true)
        var noGrace = TransitionPolicy()
        noGrace.gracePeriodEntitled = false
        let grace = try await StateHarness(store: InMemoryStateStore(), policy: noGrace).runEach([Table.subscribed, Table.failGrace])
        #expect(grace.last?.type == "grace_period_entered")
        #expect(grace.last?.entitled == false)
    }

    @Test func replayYieldsTheSameEventIdsAndBytes() async throws {
        let inputs = Table.rows.flatMap { $0.history + [$0.input] }
        var runs: [[[UInt8]]] = []
        for store in try await Self.stores() {
            let harness = StateHarness(store: store)
            runs.append(try await harness.runEach(inputs).map(\.bytes))
        }
        #expect(runs[0] == runs[1])
        #expect(!runs[0].isEmpty)
        let ids = runs[0].compactMap { (try? JSONSerialization.jsonObject(with: Data($0))) as? [String: Any] }.map { $0["eventId"] as? String }
        // Different notifications give different ids (the table replays some histories, which dedupe drops).
        #expect(Set(ids).count == ids.count)
    }

    @Test func entitlementsQueries() async throws {
        let path = F.temporaryDatabase()
        let store = try SQLiteStateStore(path: path)
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed, Table.consumable])
        let token = AppAccountToken("5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01")!
        let during = try store.entitlements(appAccountToken: token, at: t0 + day)
        #expect(during.map(\.originalTransactionId) == ["1000", "c1"])
        #expect(during.allSatisfy { $0.entitled })
        let after = try store.entitlements(appAccountToken: token, at: t0 + 31 * day)
        #expect(after.first { $0.originalTransactionId == "1000" }?.state == .expired)
        #expect(after.first { $0.originalTransactionId == "1000" }?.entitled == false)
        try store.close()
        // A read-only connection (what the CLI opens) sees the same.
        var options = SQLiteStateStore.Options()
        options.readOnly = true
        let reader = try SQLiteStateStore(path: path, options: options)
        #expect(try reader.subscription(originalTransactionId: "1000")?.productId == "pro.monthly")
        let json = try JSONEncoder().encode(try reader.entitlements(originalTransactionId: "1000", at: t0 + day))
        #expect(String(decoding: json, as: UTF8.self).contains("\"entitled\":true"))
        #expect(try reader.entitlements(appAccountToken: AppAccountToken(UUID()), at: t0).isEmpty)
    }
}

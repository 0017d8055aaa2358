import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

/// Issue 11 §1-2: access that ends by time emits events from the expiry sweep, with ids that
/// depend on the boundary crossed, never on when the sweep ran. Every test runs on each store.
@Suite struct ExpirySweepTests {
    typealias F = Fixture
    static let t0 = Fixture.t0, day = Fixture.day
    static let minute: Int64 = 60_000
    /// The default expiry_leeway (5 minutes).
    static let leeway: Int64 = 5 * minute
    /// End of the first period in `Table.subscribed`.
    static let end = t0 + 30 * day

    @Test(arguments: StoreFactory.all)
    func lostExpiredNotificationExpiresOnceBySweep(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed, Table.disabled])
        // Within the leeway nothing ends yet.
        #expect(try await harness.sweep(at: Self.end + Self.leeway - 1).isEmpty)
        let swept = try await harness.sweep(at: Self.end + Self.leeway)
        #expect(swept.map(\.type) == ["expired"])
        let event = try #require(swept.first)
        #expect(event.json["source"] as? String == "clock")
        #expect(event.state == "expired" && !event.entitled)
        #expect(event.json["previousState"] as? String == "active")
        #expect(event.json["expiresDate"] as? Int64 == Self.end)
        #expect(event.json["signedDate"] is NSNull && event.json["notificationType"] is NSNull)
        #expect(event.headers["signet-event-type"] == "expired")
        let snapshot = try #require(try store.subscription(originalTransactionId: "1000"))
        #expect(snapshot.state == .expired && !snapshot.entitled)
        #expect(snapshot.evaluatedAt == Self.end, "derived at the boundary, not at the sweep's time")
        // A second sweep, later, finds nothing left to cross.
        #expect(try await harness.sweep(at: Self.end + 40 * Self.day).isEmpty)
        // Apple's EXPIRED arriving late confirms the change: no second `expired`.
        let late = try await harness.runEach([Table.expiredVoluntary])
        #expect(!late.map(\.type).contains("expired"), "late EXPIRED emitted \(late.map(\.type))")
        #expect(try store.subscription(originalTransactionId: "1000")?.state == .expired)
    }

    @Test(arguments: StoreFactory.all)
    func sweepEventsDoNotDependOnWhenTheSweepRuns(_ factory: StoreFactory) async throws {
        var runs: [[[UInt8]]] = []
        for sweepAt in [Self.end + Self.leeway, Self.end + 90 * Self.day] {
            let store = try await factory.make()
            defer { try? store.close() }
            let harness = StateHarness(store: store)
            _ = try await harness.runEach([Table.subscribed, Table.disabled])
            runs.append(try await harness.sweep(at: sweepAt).map(\.bytes))
        }
        #expect(runs[0].count == 1)
        #expect(runs[0] == runs[1], "the same crossing must give the same bytes and id")
    }

    @Test(arguments: StoreFactory.all)
    func anUndeliveredSweepIsRedeliveredByteForByte(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed])
        // Committed, never acknowledged: a crash before the sinks acked.
        let first = try await harness.sweep(at: Self.end + Self.day, acknowledge: false)
        #expect(first.map(\.type) == ["expired"])
        let restarted = StateHarness(store: store)
        let pending = try #require(try await restarted.transition.undeliveredOutputs())
        #expect(pending.records.flatMap(\.outputs).map(\.value) == first.map(\.bytes))
        try await restarted.transition.acknowledge(pending)
        #expect(try await restarted.sweep(at: Self.end + 2 * Self.day).isEmpty)
        #expect(try await restarted.transition.undeliveredOutputs() == nil)
    }

    @Test(arguments: StoreFactory.all)
    func graceThatLapsesEntersBillingRetryOnce(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([Table.subscribed, Table.failGrace])
        let graceEnds = Self.t0 + 36 * Self.day
        #expect(try await harness.sweep(at: graceEnds).isEmpty, "within the leeway")
        let swept = try await harness.sweep(at: graceEnds + Self.day)
        #expect(swept.map(\.type) == ["billing_retry_entered"])
        #expect(swept.first?.json["previousState"] as? String == "grace_period")
        #expect(swept.first?.entitled == false)
        let late = F.notification(
            .gracePeriodExpired, uuid: "ge-late", signed: graceEnds + 2 * Self.day,
            transaction: F.transaction(id: "1000", purchase: Self.t0, expires: Self.end, signed: graceEnds + 2 * Self.day),
            renewal: F.renewal(signed: graceEnds + 2 * Self.day, billingRetry: true, graceEnds: graceEnds))
        #expect(try await harness.runEach([late]).isEmpty, "GRACE_PERIOD_EXPIRED confirms what the sweep said")
        #expect(try store.subscription(originalTransactionId: "1000")?.state == .billingRetry)
    }

    @Test(arguments: StoreFactory.all)
    func aRenewalReportedWithinTheLeewayDoesNotFlap(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let clock = TestClock(Self.end + Self.leeway / 2)
        let harness = StateHarness(store: store) { $0.clock = clock.function }
        _ = try await harness.runEach([Table.subscribed])
        #expect(try harness.transition.sweep(limit: 100) == nil)
        let renew = F.notification(
            .didRenew, uuid: "dr-late", signed: Self.end + Self.minute,
            transaction: F.transaction(id: "2000", purchase: Self.end, expires: Self.end + 30 * Self.day, signed: Self.end + Self.minute),
            renewal: F.renewal(signed: Self.end + Self.minute))
        #expect(try await harness.runEach([renew]).map(\.type) == ["renewed"])
        clock.now = Self.end + 2 * Self.day
        #expect(try harness.transition.sweep(limit: 100) == nil)
        clock.now = Self.end + 31 * Self.day
        let batch = try #require(try harness.transition.sweep(limit: 100))
        #expect(StateHarness.result(of: batch).events.map(\.type) == ["expired"])
    }

    @Test(arguments: StoreFactory.all)
    func nonRenewingSubscriptionsEndByTheirDurationPolicy(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        var policy = TransitionPolicy()
        policy.nonRenewingDurations.set("season.pass", .seconds(30 * 86_400))
        policy.nonRenewingDurations.set("pass.*", .seconds(7 * 86_400))
        policy.nonRenewingDurations.set("pass.long.*", .seconds(90 * 86_400))
        let harness = StateHarness(store: store, policy: policy)
        func buy(_ otid: String, _ product: String) -> VerifiedPayload {
            // Apple documents expiresDate for auto-renewable subscriptions only: none here.
            F.notification(.oneTimeCharge, uuid: "buy-\(otid)", signed: Self.t0,
                           transaction: F.transaction(otid: otid, id: otid, product: product, type: .nonRenewingSubscription,
                                                      purchase: Self.t0, signed: Self.t0))
        }
        let bought = try await harness.runEach([
            buy("nr-exact", "season.pass"), buy("nr-prefix", "pass.week"), buy("nr-longest", "pass.long.q1"), buy("nr-none", "museum.pass"),
        ])
        #expect(bought.map(\.type) == ["granted", "granted", "granted", "granted"])
        let ends = bought.map { $0.json["expiresDate"] as? Int64 }
        #expect(ends == [Self.t0 + 30 * Self.day, Self.t0 + 7 * Self.day, Self.t0 + 90 * Self.day, nil])
        #expect(bought.map { $0.json["expiresDateSource"] as? String } == ["duration_policy", "duration_policy", "duration_policy", "unknown"])

        let week = try await harness.sweep(at: Self.t0 + 8 * Self.day)
        #expect(week.map { $0.json["originalTransactionId"] as? String } == ["nr-prefix"])
        #expect(week.map(\.type) == ["expired"])
        let later = try await harness.sweep(at: Self.t0 + 1000 * Self.day)
        #expect(later.compactMap { $0.json["originalTransactionId"] as? String } == ["nr-exact", "nr-longest"])
        // Without a policy entry no end is known: still active, said so.
        let open = try store.entitlements(originalTransactionId: "nr-none", at: Self.t0 + 1000 * Self.day)
        #expect(open.first?.entitled == true && open.first?.expiresDateSource == "unknown")
        #expect(try store.entitlements(originalTransactionId: "nr-exact", at: Self.t0 + 31 * Self.day).first?.entitled == false)
    }

    @Test(arguments: StoreFactory.all)
    func aPaidPeriodEndingInBillingRetryChangesTheEntitlement(_ factory: StoreFactory) async throws {
        // Apple started billing retry before the paid period ended: access lasts until it ends.
        let store = try await factory.make()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let early = F.notification(
            .didFailToRenew, uuid: "f-early", signed: Self.end - Self.day,
            transaction: F.transaction(id: "1000", purchase: Self.t0, expires: Self.end, signed: Self.end - Self.day),
            renewal: F.renewal(signed: Self.end - Self.day, billingRetry: true))
        let events = try await harness.runEach([Table.subscribed, early])
        #expect(events.last?.type == "billing_retry_entered" && events.last?.entitled == true)
        let swept = try await harness.sweep(at: Self.end + Self.day)
        #expect(swept.map(\.type) == ["entitlement_changed"])
        #expect(swept.first?.entitled == false && swept.first?.state == "billing_retry")
    }
}

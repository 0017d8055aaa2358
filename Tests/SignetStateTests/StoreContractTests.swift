import AppStoreModels
import Foundation
import SignetCore
@testable import SignetState
import SignetStateTestSupport
import Testing

/// The store contract (outbox, redelivery, retention, lookups) on every store kind.
@Suite struct StoreContractTests {
    typealias F = Fixture

    @Test(arguments: StoreKind.durable)
    func restartRedeliversExactlyTheUndeliveredEvents(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        var store = try await location.open()
        var harness = StateHarness(store: store)
        // Batch 1 is delivered; batch 2 commits but the process "dies" before the sinks ack.
        _ = try await harness.run([Table.subscribed])
        let unacked = try await harness.run([Table.disabled, Table.expiredVoluntary], acknowledge: false)
        #expect(unacked.events.map(\.type) == ["auto_renew_disabled", "expired"])
        try store.close()

        store = try await location.open()
        harness = StateHarness(store: store)
        let redelivery = try #require(try await harness.transition.undeliveredOutputs())
        #expect(redelivery.isRedelivery)
        let again = StateHarness.result(of: redelivery)
        #expect(again.events.map(\.bytes) == unacked.events.map(\.bytes))
        #expect(again.events.map(\.eventId) == unacked.events.map(\.eventId))
        #expect(again.events.map(\.headers) == unacked.events.map(\.headers))
        // The source was not committed, so the inputs come again: they are duplicates now.
        let replay = try await harness.run([Table.disabled, Table.expiredVoluntary], acknowledge: false)
        #expect(replay.events.isEmpty)
        #expect(replay.dropped == 2)
        // The runner acknowledges the redelivery; after that nothing is pending.
        try await harness.transition.acknowledge(redelivery)
        try await harness.dedupe.acknowledge(redelivery)
        #expect(try await harness.transition.undeliveredOutputs() == nil)
        try store.close()
        let reopened = try await location.open()
        #expect(try reopened.undeliveredEvents().isEmpty)
        #expect(try reopened.subscription(originalTransactionId: "1000")?.state == .expired)
        try reopened.close()
    }

    @Test(arguments: StoreKind.available)
    func outboxRetentionKeepsDeliveredRowsUntilPruned(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation(outboxRetention: .seconds(3600)).open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.run([Table.subscribed])
        #expect(try store.undeliveredEvents().isEmpty)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try store.prune(keysBefore: 0, now: now + 7_200_000)
        // Keys survive (keysBefore 0), the delivered row is gone, a retry is still a retry.
        #expect(try await harness.run([Table.subscribed]).dropped == 1)
        try store.prune(keysBefore: now + 1_000_000, now: now)
        #expect(try await harness.run([Table.subscribed]).dropped == 0)
    }

    @Test("every stored purchase can be listed in pages, in order (reconcile --all)", arguments: StoreKind.available)
    func listsPurchasesInPages(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(try store.originalTransactionIds(after: nil, limit: 10).isEmpty)
        let ids = ["1005", "1001", "2000", "1003", "10", "1002", "1004"]
        try store.withTransaction { transaction in
            for id in ids { try transaction.save(SubscriptionSnapshot(originalTransactionId: id)) }
        }
        var listed: [String] = []
        while true {
            let page = try store.originalTransactionIds(after: listed.last, limit: 3)
            #expect(page.count <= 3)
            if page.isEmpty { break }
            listed += page
        }
        #expect(listed == ids.sorted(), "\(kind)")
        #expect(try store.originalTransactionIds(after: "1003", limit: 2) == ["1004", "1005"], "\(kind)")
        #expect(try store.originalTransactionIds(after: "2000", limit: 5).isEmpty, "\(kind)")
    }

    @Test("a purchase's history: its kept events in order, delivery times, the newest when limited", arguments: StoreKind.available)
    func historyOfOnePurchase(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation(outboxRetention: .seconds(3600)).open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let other = F.notification(
            .subscribed, .initialBuy, uuid: "o1", signed: Table.t0,
            transaction: F.transaction(otid: "3000", id: "3000", purchase: Table.t0, expires: Table.t0 + 30 * F.day, signed: Table.t0),
            renewal: F.renewal(otid: "3000", signed: Table.t0))
        let published = try await harness.runEach([Table.subscribed, other, Table.disabled])
        let pending = try await harness.run([Table.expiredVoluntary], acknowledge: false)

        let history = try store.eventHistory(originalTransactionId: "1000", limit: 100)
        let ownEvents = published.filter { $0.json["originalTransactionId"] as? String == "1000" } + pending.events
        #expect(history.map(\.payload) == ownEvents.map(\.bytes), "\(kind): byte for byte, in order, no other purchase's")
        #expect(history.map(\.sequence) == history.map(\.sequence).sorted())
        #expect(history.dropLast().allSatisfy { $0.deliveredAt != nil && $0.createdAt > 0 }, "\(kind)")
        #expect(history.last?.deliveredAt == nil, "\(kind): the unacknowledged event is still in flight")
        #expect(try store.eventHistory(originalTransactionId: "1000", limit: 2).map(\.sequence) == history.suffix(2).map(\.sequence))
        #expect(try store.eventHistory(originalTransactionId: "9999", limit: 10).isEmpty)

        let json = try #require(try StateJSON.history("1000", limit: 2, in: store))
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let events = try #require(answer["events"] as? [[String: Any]])
        #expect(events.map { ($0["event"] as? [String: Any])?["type"] as? String } == ["auto_renew_disabled", "expired"])
        #expect(events.last?["deliveredAt"] is NSNull)
        #expect(try StateJSON.history("9999", in: store) == nil, "neither the purchase nor an event: nil (the CLI's exit 1, the API's 404)")
    }

    @Test("stale subscriptions: a period that ended in the window while a renewal was expected, and nothing else", arguments: StoreKind.available)
    func staleSubscriptions(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let end: Int64 = 1_700_000_000_000
        func snapshot(_ id: String, expires: Int64?, renewal: Int64? = nil, configure: (inout SubscriptionSnapshot) -> Void = { _ in }) -> SubscriptionSnapshot {
            var snapshot = SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: end - 1000)
            snapshot.productType = "Auto-Renewable Subscription"
            snapshot.autoRenewEnabled = true
            snapshot.expiresDate = expires
            snapshot.renewalDate = renewal
            configure(&snapshot)
            return snapshot
        }
        try store.withTransaction { transaction in
            for snapshot in [
                snapshot("a-stale", expires: end) { $0.environment = "Sandbox" },
                snapshot("b-renewal-info-later", expires: end - 10_000, renewal: end) { $0.environment = "Production" },  // the period end is the renewal date
                snapshot("c-too-old", expires: end - 100_000),
                snapshot("d-not-yet", expires: end + 1),
                snapshot("e-auto-renew-off", expires: end) { $0.autoRenewEnabled = false },
                snapshot("f-intent", expires: end) { $0.expirationIntent = 1 },
                snapshot("g-billing-retry", expires: end) { $0.isInBillingRetryPeriod = true },
                snapshot("h-refunded", expires: end) { $0.revocationDate = end - 5 },
                snapshot("i-one-time", expires: nil) { $0.productType = "Non-Consumable" },
                snapshot("j-stale-too", expires: end - 50_000),
            ] { try transaction.save(snapshot) }
        }
        let stale = try store.staleSubscriptions(endedAfter: end - 60_000, endedBefore: end, after: nil, limit: 10)
        #expect(stale.map { $0.originalTransactionId } == ["a-stale", "b-renewal-info-later", "j-stale-too"], "\(kind)")
        #expect(stale.map { $0.periodEnd } == [end, end, end - 50_000], "\(kind): the period's end, the renewal date where later")
        #expect(stale.map { $0.environment } == ["Sandbox", "Production", nil], "\(kind): the environment each was bought in")
        #expect(try store.staleSubscriptions(endedAfter: end - 60_000, endedBefore: end, after: nil, limit: 2).map { $0.originalTransactionId } == ["a-stale", "b-renewal-info-later"], "\(kind)")
        // Keyset paging: the next page starts after the last id of the previous one.
        #expect(try store.staleSubscriptions(endedAfter: end - 60_000, endedBefore: end, after: "b-renewal-info-later", limit: 2).map { $0.originalTransactionId } == ["j-stale-too"], "\(kind)")
    }

    @Test("marking delivered takes any set of sequences: gaps, repeats, any order", arguments: [Duration.zero, .seconds(3600)])
    func markingScatteredSequences(_ retention: Duration) async throws {
        for kind in StoreKind.available {
            let store = try await kind.makeLocation(outboxRetention: retention).open()
            defer { try? store.close() }
            let sequences = try store.withTransaction { transaction in
                try (0..<7).map { index in
                    var event = EntitlementEvent(eventId: "e\(index)", type: .granted, entitled: true, source: .notification)
                    event.originalTransactionId = "sub-\(index)"
                    return try transaction.appendEvent(event, payload: Array("e\(index)".utf8), inputKey: "k\(index)", createdAt: 1)
                }
            }
            #expect(try store.undeliveredEvents().map(\.sequence) == sequences, "\(kind)")
            // Two runs (0-1, 3-4) and a single (6), out of order, with a repeat.
            try store.markDelivered([sequences[4], sequences[0], sequences[6], sequences[3], sequences[1], sequences[0]], at: 5)
            #expect(try store.undeliveredEvents().map(\.sequence) == [sequences[2], sequences[5]], "\(kind)")
            try store.markDelivered([sequences[5]], at: 6)
            #expect(try store.undeliveredEvents().map(\.sequence) == [sequences[2]], "\(kind)")
        }
    }

    @Test(arguments: StoreKind.available)
    func aBatchThatFailsCommitsNothing(_ kind: StoreKind) async throws {
        struct Boom: Error {}
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(throws: Boom.self) {
            try store.withTransaction { transaction in
                try transaction.recordKey("k1", seenAt: 1)
                try transaction.save(SubscriptionSnapshot(originalTransactionId: "9", state: .active, entitled: true, evaluatedAt: 5))
                throw Boom()
            }
        }
        #expect(try store.containedKeys(["k1"]).isEmpty)
        #expect(try store.subscription(originalTransactionId: "9") == nil)
        // The transaction sees its own writes.
        let seen = try store.withTransaction { transaction in
            try transaction.recordKey("k2", seenAt: 1)
            var snapshot = SubscriptionSnapshot(originalTransactionId: "9", state: .active, entitled: true, evaluatedAt: 5)
            snapshot.appAccountToken = AppAccountToken("AC000000-0000-4000-8000-000000000001")
            try transaction.save(snapshot)
            return (try transaction.containsKey("k2"), try transaction.subscription(originalTransactionId: "9"))
        }
        #expect(seen.0)
        #expect(seen.1?.evaluatedAt == 5)
        #expect(try store.containedKeys(["k1", "k2"]) == ["k2"])
        #expect(try store.subscriptions(appAccountToken: AppAccountToken("ac000000-0000-4000-8000-000000000001")!).map(\.originalTransactionId) == ["9"])
    }

    @Test(arguments: StoreKind.available)
    func aSnapshotRoundTripsEveryField(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        var snapshot = SubscriptionSnapshot(originalTransactionId: "77", state: .gracePeriod, entitled: true, evaluatedAt: 42)
        snapshot.transactionId = "t"; snapshot.productId = "p"; snapshot.productType = "Auto-Renewable Subscription"
        snapshot.bundleId = "b"; snapshot.environment = "Sandbox"; snapshot.appAccountToken = AppAccountToken(UUID()); snapshot.ownership = "PURCHASED"
        snapshot.purchaseDate = 1; snapshot.expiresDate = 2; snapshot.transactionSignedDate = 3; snapshot.revocationDate = 4
        snapshot.revocationReason = 5; snapshot.revocationType = "REFUND_FULL"; snapshot.autoRenewEnabled = false
        snapshot.autoRenewProductId = "q"; snapshot.isInBillingRetryPeriod = true; snapshot.gracePeriodExpiresDate = 6
        snapshot.expirationIntent = 7; snapshot.renewalSignedDate = 8; snapshot.lastNotificationType = "DID_FAIL_TO_RENEW"
        snapshot.lastSubtype = "GRACE_PERIOD"; snapshot.lastNotificationUUID = "u"
        try store.withTransaction { try $0.save(snapshot) }
        #expect(try store.subscription(originalTransactionId: "77") == snapshot)
        snapshot.state = .expired
        snapshot.expiresDate = nil
        try store.withTransaction { try $0.save(snapshot) }
        #expect(try store.subscription(originalTransactionId: "77") == snapshot)
    }

    /// A store may update a row more cheaply when its indexed values (appAccountToken and the
    /// next boundary) stay the same; the lookups by those values must follow every save anyway.
    @Test(arguments: StoreKind.available)
    func tokenAndBoundaryLookupsFollowEverySave(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        func purchase(token: String?, expires: Int64, product: String) -> SubscriptionSnapshot {
            var snapshot = SubscriptionSnapshot(originalTransactionId: "A", state: .active, entitled: true, evaluatedAt: 10)
            snapshot.appAccountToken = token.flatMap { AppAccountToken($0) }
            snapshot.expiresDate = expires
            snapshot.productId = product
            return snapshot
        }
        func due(_ cutoff: Int64) throws -> [String] {
            try store.withTransaction { try $0.subscriptionsDue(atOrBefore: cutoff, limit: 10).map(\.originalTransactionId) }
        }
        func owners(_ token: String) throws -> [String] {
            try store.subscriptions(appAccountToken: AppAccountToken(token)!).map(\.originalTransactionId)
        }
        /// One transaction that reads the purchase, then saves each snapshot in turn.
        func readThenSave(_ snapshots: SubscriptionSnapshot...) throws {
            try store.withTransaction { transaction in
                _ = try transaction.subscription(originalTransactionId: "A")
                for snapshot in snapshots { try transaction.save(snapshot) }
            }
        }

        // Saved unread (as the sweep's first save or a blind write would).
        try store.withTransaction { try $0.save(purchase(token: "11111111-0000-4000-8000-000000000001", expires: 100, product: "p1")) }
        // Read, then saved with the indexed values unchanged and another field changed.
        try readThenSave(purchase(token: "11111111-0000-4000-8000-000000000001", expires: 100, product: "p2"))
        #expect(try store.subscription(originalTransactionId: "A") == purchase(token: "11111111-0000-4000-8000-000000000001", expires: 100, product: "p2"))
        #expect(try owners("11111111-0000-4000-8000-000000000001") == ["A"])
        #expect(try due(100) == ["A"])

        // Read, then both indexed values change.
        try readThenSave(purchase(token: "22222222-0000-4000-8000-000000000002", expires: 200, product: "p2"))
        #expect(try owners("11111111-0000-4000-8000-000000000001").isEmpty)
        #expect(try owners("22222222-0000-4000-8000-000000000002") == ["A"])
        #expect(try due(150).isEmpty)
        #expect(try due(200) == ["A"])

        // Two saves in one transaction: the second compares with the first, not with the read.
        try readThenSave(purchase(token: nil, expires: 300, product: "p3"), purchase(token: "22222222-0000-4000-8000-000000000002", expires: 200, product: "p4"))
        #expect(try store.subscription(originalTransactionId: "A") == purchase(token: "22222222-0000-4000-8000-000000000002", expires: 200, product: "p4"))
        #expect(try owners("22222222-0000-4000-8000-000000000002") == ["A"])
        #expect(try due(250) == ["A"])

        // A token removed, then the row read by the due query and saved with what it read.
        try readThenSave(purchase(token: nil, expires: 200, product: "p4"))
        try store.withTransaction { transaction in
            for snapshot in try transaction.subscriptionsDue(atOrBefore: 200, limit: 10) {
                var next = snapshot
                next.productId = "p5"
                try transaction.save(next)
            }
        }
        #expect(try owners("22222222-0000-4000-8000-000000000002").isEmpty)
        #expect(try store.subscription(originalTransactionId: "A") == purchase(token: nil, expires: 200, product: "p5"))
        #expect(try due(200) == ["A"])

        if case .sqlite = kind {
            // A boundary stored by an older version (or the backfill) that the snapshot's rule
            // would not give today is rewritten by the next save, not kept because the
            // snapshot alone looks unchanged.
            let database = try SQLiteDatabase(path: (store as! SQLiteStateStore).path)
            defer { database.close() }
            try database.execute("UPDATE subscriptions SET next_boundary = 999 WHERE original_transaction_id = 'A'")
            try store.withTransaction { transaction in
                let read = try #require(try transaction.subscription(originalTransactionId: "A"))
                try transaction.save(read)
            }
            #expect(try due(199).isEmpty)
            #expect(try due(200) == ["A"])
            // The indexes agree with the table, entry for entry.
            let check = try database.statement(SQLiteQuery("PRAGMA integrity_check"))
            defer { check.reset() }
            #expect(try check.step())
            #expect(check.string(0) == "ok")
        }
    }
}

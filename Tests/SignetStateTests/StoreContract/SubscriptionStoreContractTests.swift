import AppStoreModels
import Foundation
import SignetCore
@testable import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for purchases (``SubscriptionStore``): listing, stale subscriptions, every field round trip, the token and boundary indexes, on every store kind.
@Suite struct SubscriptionStoreContractTests {
    typealias F = Fixture

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

    @Test("a purchase read with its download's consent restriction (the entitlement answer's one read): none, in force, cleared, no download id; by id and by account", arguments: StoreKind.available)
    func subscriptionsWithConsent(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let token = AppAccountToken(UUID(uuidString: "7D0C6A52-3E1B-4F9A-8C2D-5B6E7F809A1B")!)
        func snapshot(_ id: String, download: String?) -> SubscriptionSnapshot {
            var snapshot = SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: 1_000)
            snapshot.appTransactionId = download
            snapshot.appAccountToken = token
            snapshot.environment = "Sandbox"
            return snapshot
        }
        let rescinded = ConsentRestriction(
            appTransactionId: "dl-rescinded", bundleId: "com.example", environment: "Sandbox", rescindedAt: 900, notificationUUID: "u-1")
        var cleared = ConsentRestriction(
            appTransactionId: "dl-cleared", bundleId: "com.example", environment: "Production", rescindedAt: 800, notificationUUID: "u-2")
        cleared.clearedAt = 950
        cleared.clearedBy = "support"
        try store.withTransaction { transaction in
            try transaction.save(snapshot("p-none", download: "dl-none"))
            try transaction.save(snapshot("p-rescinded", download: "dl-rescinded"))
            try transaction.save(snapshot("p-cleared", download: "dl-cleared"))
            try transaction.save(snapshot("p-no-download", download: nil))
            try transaction.save(rescinded)
            try transaction.save(cleared)
        }
        let expected: [String: ConsentRestriction?] = [
            "p-none": nil, "p-rescinded": rescinded, "p-cleared": cleared, "p-no-download": nil,
        ]
        for (id, restriction) in expected {
            let read = try #require(try store.subscriptionWithConsent(originalTransactionId: id), "\(kind) \(id)")
            #expect(read.0 == (try store.subscription(originalTransactionId: id)), "\(kind) \(id)")
            #expect(read.1 == restriction, "\(kind) \(id)")
        }
        #expect(try store.subscriptionWithConsent(originalTransactionId: "p-unknown") == nil)
        let account = try store.subscriptionsWithConsent(appAccountToken: token)
        #expect(account.map(\.0.originalTransactionId) == expected.keys.sorted(), "\(kind)")
        for (snapshot, restriction) in account {
            #expect(restriction == expected[snapshot.originalTransactionId] ?? nil, "\(kind) \(snapshot.originalTransactionId)")
        }
        // The answers: restricted only where the restriction is in force.
        let answers = try StateJSON.entitlements(.appAccountToken(token), in: store, at: 2_000)
        let entitlements = try #require(try JSONSerialization.jsonObject(with: Data(answers)) as? [[String: Any]])
        let restricted = entitlements.filter { $0["restricted"] as? Bool == true }.compactMap { $0["originalTransactionId"] as? String }
        #expect(restricted == ["p-rescinded"], "\(kind) \(entitlements)")
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
        snapshot.expiresDateSource = "transaction"; snapshot.renewalDate = 9; snapshot.subscriptionGroupIdentifier = "g"
        snapshot.revocationPercentage = 500; snapshot.previousOriginalTransactionId = "66"; snapshot.migratedToOriginalTransactionId = "88"
        snapshot.appTransactionId = "app"; snapshot.recentSubscriptionStartDate = 10
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

import AppStoreModels
import Foundation
import SignetCore
@testable import SignetState
import SignetStateTestSupport
import Testing

/// Entitlement names (a store's `entitlements:`): which names a purchase grants, on events,
/// in answers, kept by every store kind across a reopen and a read-only open.
@Suite struct EntitlementNamesTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    static let names = EntitlementNames([
        "pro": ["pro.monthly", "pro.yearly", "20001234"],
        "ad_free": ["20001234", "lifetime"],
        "lifetime": ["lifetime"],
    ])

    @Test func aPurchaseGrantsTheNamesOfItsProductAndOfItsGroup() {
        let names = Self.names
        #expect(names.names(productId: "pro.monthly", subscriptionGroupId: nil) == ["pro"])
        #expect(names.names(productId: "pro.weekly", subscriptionGroupId: "20001234") == ["ad_free", "pro"])
        #expect(names.names(productId: "pro.monthly", subscriptionGroupId: "20001234") == ["ad_free", "pro"])
        #expect(names.names(productId: "lifetime", subscriptionGroupId: nil) == ["ad_free", "lifetime"])
        #expect(names.names(productId: "coins.100", subscriptionGroupId: "99") == [])
        #expect(names.names(productId: nil, subscriptionGroupId: nil) == [])
        #expect(EntitlementNames(pairs: names.pairs) == names, "one row per pair reads back as the same mapping")
        #expect(names.summary == "ad_free: 20001234, lifetime; lifetime: lifetime; pro: 20001234, pro.monthly, pro.yearly")
    }

    @Test(arguments: StoreKind.available)
    func eventsAndAnswersCarryTheNamesTheStoreKeeps(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        let store = try await location.open()
        #expect(store.entitlementNames == .none)
        try store.replaceEntitlementNames(Self.names)
        let harness = StateHarness(store: store)
        let grouped = F.notification(
            .subscribed, .initialBuy, uuid: "g1", signed: t0,
            transaction: F.transaction(otid: "2000", id: "2000", product: "pro.weekly", purchase: t0, expires: t0 + 7 * day, signed: t0, group: "20001234"),
            renewal: F.renewal(otid: "2000", product: "pro.weekly", signed: t0))
        let events = try await harness.runEach([Table.subscribed, grouped])
        #expect(events.map { $0.json["entitlements"] as? [String] } == [["pro"], ["ad_free", "pro"]])
        #expect(events.map { $0.json["subscriptionGroupIdentifier"] as? String } == [nil, "20001234"])

        let answers = try store.entitlements(appAccountToken: AppAccountToken("5B0F9A34-1111-4C3E-9A0E-3C1C1F0B9D01")!, at: t0 + day)
        #expect(answers.map(\.entitlements) == [["pro"], ["ad_free", "pro"]])
        #expect(answers.map(\.entitled) == [true, true])
        let json = try StateJSON.entitlements(
            .appAccountToken(AppAccountToken("5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01")!), named: "ad_free", in: store, at: t0 + day)
        let filtered = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [[String: Any]])
        #expect(filtered.map { $0["originalTransactionId"] as? String } == ["2000"], "only the purchase granting ad_free")
        // The expiry sweep's events are named too.
        let swept = try await harness.sweep(at: t0 + 8 * day + 600_000)
        #expect(swept.map { $0.json["entitlements"] as? [String] } == [["ad_free", "pro"]])

        guard kind != .memory else { return }
        try store.close()
        // Reopened: the mapping is kept (a pipeline without `entitlements:` leaves it alone).
        let reopened = try await location.open()
        #expect(reopened.entitlementNames == Self.names)
        #expect(try reopened.subscription(originalTransactionId: "2000")?.subscriptionGroupIdentifier == "20001234")
        try reopened.replaceEntitlementNames(EntitlementNames(["pro": ["pro.monthly"]]))
        try reopened.close()
        let again = try await location.open()
        defer { try? again.close() }
        #expect(try again.entitlements(originalTransactionId: "2000", at: t0 + day).map(\.entitlements) == [[]])
        #expect(try again.entitlements(originalTransactionId: "1000", at: t0 + day).map(\.entitlements) == [["pro"]])
    }

    @Test func aReaderOfADatabaseFromBeforeTheNamesReadsItUnchanged() async throws {
        let path = Fixture.temporaryDatabase()
        do {
            let store = try SQLiteStateStore(path: path)
            _ = try await StateHarness(store: store).runEach([Table.subscribed])
            try store.close()
        }
        // As an older Signet left it: no group column, no names table.
        let database = try SQLiteDatabase(path: path)
        try database.execute("""
            ALTER TABLE subscriptions DROP COLUMN subscription_group_id;
            DROP TABLE entitlement_names;
            """)
        database.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        var options = SQLiteStateStore.Options()
        options.readOnly = true
        let reader = try SQLiteStateStore(path: path, options: options)
        #expect(reader.entitlementNames == .none)
        let snapshot = try #require(try reader.subscription(originalTransactionId: "1000"))
        #expect(snapshot.state == .active && snapshot.subscriptionGroupIdentifier == nil)
        #expect(try reader.entitlements(appAccountToken: AppAccountToken("5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01")!, at: t0).count == 1)
        try reader.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "a reader never writes")

        // The next writer adds what is missing.
        let writer = try SQLiteStateStore(path: path)
        defer { try? writer.close() }
        try writer.replaceEntitlementNames(Self.names)
        #expect(try writer.entitlements(originalTransactionId: "1000", at: t0).map(\.entitlements) == [["pro"]])
    }
}

import AppStoreModels
import Foundation
import SignetCore
@testable import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for one transaction across roles (``TransactionalStore``): all or nothing, on every store kind.
@Suite struct TransactionalStoreContractTests {
    typealias F = Fixture

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
}

import AppStoreModels
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetState
import Testing

/// Issue 53, item 3: `sampleContentProvided` was one setting for the whole stage, so an app with
/// a trial on its subscriptions but none on its consumables could not answer truthfully. It
/// comes from what the backend recorded for the purchase, else the product, else the
/// entitlement, else the stage's default.
@Suite("sampleContentProvided per purchase, product and entitlement")
struct SampleContentPolicyTests {
    static let now: Int64 = 1_800_000_000_000

    static func request(_ id: String, product: String, type: TransactionType) -> ConsumptionRequestRecord {
        ConsumptionRequestRecord(
            transactionId: id, originalTransactionId: id, productId: product, productType: type.rawValue,
            requestedAt: now - 60_000, receivedAt: now - 60_000)
    }

    static func purchase(_ id: String, product: String) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: now - 86_400_000)
        snapshot.productId = product
        snapshot.purchaseDate = now - 86_400_000
        return snapshot
    }

    /// The `sampleContentProvided` of the answer the policy would send.
    static func sent(_ policy: ConsumptionPolicy, _ request: ConsumptionRequestRecord, usage: ConsumptionUsage? = nil) -> Bool? {
        let consent = ConsumptionConsent(.originalTransactionId(request.transactionId), consented: true, at: now - 100, by: "test")
        let names = EntitlementNames(["pro": ["app.pro.monthly"]])
        switch policy.decide(
            request, consent: consent, usage: usage, purchase: purchase(request.transactionId, product: request.productId ?? ""),
            names: names, at: now)
        {
        case .send(let body, _): return body.sampleContentProvided
        default: return nil
        }
    }

    @Test func theMostSpecificSourceDecides() {
        var policy = ConsumptionPolicy()
        policy.sampleContentProvided = false
        policy.sampleContentProvidedByEntitlement = ["pro": true]
        policy.sampleContentProvidedByProduct = ["app.coins.100": false, "app.pro.monthly.intro": true]
        let subscription = Self.request("s", product: "app.pro.monthly", type: .autoRenewableSubscription)
        let coins = Self.request("c", product: "app.coins.100", type: .consumable)
        let other = Self.request("o", product: "app.gems", type: .consumable)
        #expect(Self.sent(policy, subscription) == true, "the entitlement's trial")
        #expect(Self.sent(policy, coins) == false, "the product's setting")
        #expect(Self.sent(policy, other) == false, "the default")
        // What the backend recorded for this purchase wins over every setting.
        let recorded = ConsumptionUsage(transactionId: "c", consumptionPercentage: nil, sampleContentProvided: true, at: Self.now - 10, by: "api: app")
        #expect(recorded.problem == nil, "a usage record may carry only this")
        #expect(Self.sent(policy, coins, usage: recorded) == true)
        policy.sampleContentProvided = true
        #expect(Self.sent(policy, other) == true)
    }
}

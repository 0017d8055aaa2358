public import SignetState

/// Whether Signet's own state lets a customer have an offer: the rules of
/// `POST /v1/offers/signature` (docs/offers.md#signing-for-the-app).
///
/// | offer | eligible when |
/// |---|---|
/// | `promotional` | the purchase is known and current (`active`, `grace_period`, `billing_retry`), not refunded or revoked |
/// | `win_back` | the purchase is known and lapsed (`expired`), not refunded or revoked |
/// | `introductory` | no auto-renewable purchase of the customer's (by appAccountToken and originalTransactionId) is of the product or its subscription group; with earlier subscriptions, the product's group must be known (given, or from the customer's own purchase of it) |
///
/// Never for a customer who withdrew consent (a RESCIND_CONSENT in force for the purchase's
/// app transaction).
public struct OfferEligibility: Sendable, Hashable {
    /// Why not, as a code (`unknown_purchase`, `not_subscribed`, `not_lapsed`, `refunded`,
    /// `consent_restricted`, `subscribed_before`, `subscription_group_unknown`); nil when eligible.
    public var reason: String?
    /// One sentence for a person.
    public var detail: String

    public var isEligible: Bool { reason == nil }

    static func eligible(_ detail: String) -> OfferEligibility { OfferEligibility(reason: nil, detail: detail) }
    static func refused(_ reason: String, _ detail: String) -> OfferEligibility { OfferEligibility(reason: reason, detail: detail) }

    /// The states a current subscriber is in.
    static let current: Set<SubscriptionState> = [.active, .gracePeriod, .billingRetry]

    /// The rule for a promotional or win-back offer, over the purchase as stored.
    static func decide(_ offer: OfferSignatureRequest.Offer, purchase: SubscriptionSnapshot?, restricted: Bool) -> OfferEligibility {
        guard let purchase else { return .refused("unknown_purchase", "Signet has no purchase with this originalTransactionId") }
        if restricted { return .refused("consent_restricted", "the customer withdrew consent (RESCIND_CONSENT): no offers") }
        if purchase.revocationDate != nil || purchase.state == .refunded || purchase.state == .revoked {
            return .refused("refunded", "the purchase was refunded or revoked")
        }
        switch offer {
        case .promotional:
            guard current.contains(purchase.state) else {
                return .refused(
                    "not_subscribed", "the purchase is \(purchase.state.rawValue): a promotional offer is for a current subscriber"
                        + (purchase.state == .expired ? " (a lapsed one: win_back)" : ""))
            }
            return .eligible("a current subscriber (\(purchase.state.rawValue))")
        case .winBack:
            guard purchase.state == .expired else {
                return .refused("not_lapsed", "the purchase is \(purchase.state.rawValue): a win-back offer is for a lapsed subscription")
            }
            return .eligible("a lapsed subscription")
        case .introductory:
            return .eligible("")
        }
    }

    /// The rule for an introductory offer, over every purchase Signet knows of the customer.
    static func introductory(productId: String, group: String?, purchases: [SubscriptionSnapshot], restricted: Bool) -> OfferEligibility {
        if restricted { return .refused("consent_restricted", "the customer withdrew consent (RESCIND_CONSENT): no offers") }
        let subscriptions = purchases.filter { $0.productType == nil || $0.productType == "Auto-Renewable Subscription" }
        // The product's group: as asked, or from a purchase of it.
        let group = group ?? subscriptions.first { $0.productId == productId }?.subscriptionGroupIdentifier
        if let earlier = subscriptions.first(where: { $0.productId == productId || (group != nil && $0.subscriptionGroupIdentifier == group) }) {
            return .refused(
                "subscribed_before",
                "the customer subscribed to \(earlier.productId ?? "a product") of this subscription group before (\(earlier.originalTransactionId))")
        }
        // Allowing overrides the App Store's own judgement: without the product's group, an
        // earlier subscription might be in it, so no.
        if group == nil, let earlier = subscriptions.first {
            return .refused(
                "subscription_group_unknown",
                "the customer subscribed to \(earlier.productId ?? "a product") before, and Signet cannot tell whether \(productId) is in its subscription group: give subscriptionGroupIdentifier")
        }
        return .eligible(subscriptions.isEmpty ? "no earlier subscription" : "no earlier subscription in the product's subscription group")
    }
}

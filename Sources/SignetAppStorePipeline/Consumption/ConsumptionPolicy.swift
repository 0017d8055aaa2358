import AppStoreModels
package import SignetAppStoreAPI
package import SignetState
import Foundation

/// What Signet answers to a refund question (docs/consumption.md): whether it may answer at
/// all (consent), and the body it sends, from the pipeline's policy, the customer's ledger
/// entry and Signet's own state of the purchase. Pure: the responder asks it inside the store
/// transaction that claims the request.
package struct ConsumptionPolicy: Sendable, Hashable {
    /// Where consent comes from.
    package enum ConsentSource: String, Sendable, Hashable, CaseIterable {
        /// Only customers with a consenting ledger entry are answered (the default).
        case ledger
        /// The app's terms obtained every customer's consent: everyone is answered unless the
        /// ledger records a withdrawal. Named so nobody turns it on by accident.
        case allCustomersAgreedInAppTerms = "all_customers_agreed_in_app_terms"
    }

    package var consent = ConsentSource.ledger
    /// The refund preference sent when nothing more specific applies (nil: none).
    package var refundPreference: ConsumptionInformation.RefundPreference?
    /// Per Apple's `consumptionRequestReason` (`UNINTENDED_PURCHASE`, ...); `.some(nil)`: none.
    package var refundPreferenceByReason: [String: ConsumptionInformation.RefundPreference?] = [:]
    /// Per product id; wins over the entitlement and the reason.
    package var refundPreferenceByProduct: [String: ConsumptionInformation.RefundPreference?] = [:]
    /// Per entitlement name (`entitlements:`); wins over the reason.
    package var refundPreferenceByEntitlement: [String: ConsumptionInformation.RefundPreference?] = [:]
    /// Whether the app gives a free sample, a trial or information about the content before a
    /// purchase, when nothing more specific says (``sampleContentProvided(for:usage:purchase:names:)``).
    package var sampleContentProvided = false
    /// Per product id; wins over the entitlement and the default.
    package var sampleContentProvidedByProduct: [String: Bool] = [:]
    /// Per entitlement name (`entitlements:`); wins over the default.
    package var sampleContentProvidedByEntitlement: [String: Bool] = [:]

    package init() {}

    /// What to do about one request.
    package enum Decision: Sendable, Hashable {
        /// Send this answer (v2).
        case send(ConsumptionInformation, note: String?)
        /// Send this answer through V1 (an Advanced Commerce purchase).
        case sendV1(ConsumptionInformationV1, note: String?)
        /// Do not answer: why (no consent, consent withdrawn).
        case skip(String)
        /// The deadline passed: never sent.
        case late(String)
        /// No valid answer can be built: why.
        case fail(String)
    }

    /// The decision for `request` at `instant` (ms since 1970), given the ledger entry that
    /// decides its consent (`StateStore/consumptionConsent(for:)`), what the app recorded of
    /// the transaction's use, Signet's snapshot of the purchase and the store's entitlement names.
    package func decide(
        _ request: ConsumptionRequestRecord, consent entry: ConsumptionConsent?, usage: ConsumptionUsage? = nil,
        purchase: SubscriptionSnapshot?, names: EntitlementNames, at instant: Int64
    ) -> Decision {
        if request.isPastDeadline(at: instant) {
            return .late("the deadline (12 hours after Apple signed the request) passed before an answer was sent")
        }
        if let entry, !entry.consented {
            return .skip("consent withdrawn (\(entry.subject.key), by \(entry.by))")
        }
        if entry == nil, consent == .ledger {
            return .skip("no consent recorded for the customer (appAccountToken) or the purchase (originalTransactionId)")
        }
        guard let type = request.productType.map(TransactionType.init(rawValue:)), type.isDocumented else {
            return .fail("product type \(request.productType.map { "\"\($0)\"" } ?? "absent") is not one Apple documents: its rules are unknown")
        }
        guard let purchase else {
            return .fail("Signet holds no state for purchase \(request.originalTransactionId ?? "?"): its delivery is unknown")
        }
        // The app's word first; else Signet granted what Apple signed, and a purchase refunded or
        // revoked before the question is not working as delivered.
        let revokedBefore = purchase.revocationDate.map { $0 <= request.requestedAt } ?? false
        let delivery = usage?.deliveryStatus.flatMap(ConsumptionInformation.DeliveryStatus.init(rawValue:))
            ?? (revokedBefore ? .undeliveredOther : .delivered)
        var percentage = delivery == .delivered
            ? usage?.consumptionPercentage ?? consumption(of: purchase, type: type, at: request.requestedAt) : 0
        if type == .autoRenewableSubscription { percentage = nil }
        var preference = refundPreference(for: request, purchase: purchase, customer: entry, names: names)
        let sample = sampleContentProvided(for: request, usage: usage, purchase: purchase, names: names)
        var note: String?
        if preference == .grantProrated, type != .autoRenewableSubscription,
            !(percentage.map { $0 > 0 && $0 < ConsumptionInformation.fullyConsumed } ?? false)
        {
            note = "GRANT_PRORATED needs a consumption percentage strictly between 0% and 100%, which Signet does not know for this \(type.rawValue): sent without a refund preference"
            preference = nil
        }
        if request.advancedCommerce {
            let body = ConsumptionInformationV1(
                customerConsented: true, consumptionStatus: Self.v1ConsumptionStatus(percentage),
                deliveryStatus: Self.v1DeliveryStatus(delivery), platform: 0, sampleContentProvided: sample,
                appAccountToken: request.appAccountToken?.description ?? "",
                refundPreference: preference.map(Self.v1RefundPreference))
            do {
                try body.validate()
            } catch {
                return .fail("no valid answer: \(error)")
            }
            return .sendV1(body, note: note)
        }
        let body = ConsumptionInformation(
            productType: type, customerConsented: true, deliveryStatus: delivery, sampleContentProvided: sample,
            consumptionPercentage: percentage, refundPreference: preference)
        do {
            try body.validate()
        } catch {
            return .fail("no valid answer: \(error)")
        }
        return .send(body, note: note)
    }

    /// The preference for `request`: the customer's own (ledger), else the product's, else the
    /// first of its entitlements (by name) that has one, else the reason's, else the default.
    package func refundPreference(
        for request: ConsumptionRequestRecord, purchase: SubscriptionSnapshot?, customer: ConsumptionConsent?, names: EntitlementNames
    ) -> ConsumptionInformation.RefundPreference? {
        if let own = customer?.refundPreference.flatMap(ConsumptionInformation.RefundPreference.init(rawValue:)) { return own }
        if let product = request.productId, let preference = refundPreferenceByProduct[product] { return preference }
        let entitlements = names.names(productId: request.productId, subscriptionGroupId: purchase?.subscriptionGroupIdentifier).sorted()
        for name in entitlements { if let preference = refundPreferenceByEntitlement[name] { return preference } }
        if let reason = request.reason, let preference = refundPreferenceByReason[reason] { return preference }
        return refundPreference
    }

    /// Whether a sample, trial or preview of the purchase was offered: what the app recorded for
    /// this transaction (its usage), else the product's setting, else the first of its
    /// entitlements (by name) that has one, else ``sampleContentProvided``. An app with a trial
    /// on its subscriptions but none on its consumables answers each truthfully.
    package func sampleContentProvided(
        for request: ConsumptionRequestRecord, usage: ConsumptionUsage?, purchase: SubscriptionSnapshot?, names: EntitlementNames
    ) -> Bool {
        if let recorded = usage?.sampleContentProvided { return recorded }
        if let product = request.productId, let value = sampleContentProvidedByProduct[product] { return value }
        let entitlements = names.names(productId: request.productId, subscriptionGroupId: purchase?.subscriptionGroupIdentifier).sorted()
        for name in entitlements { if let value = sampleContentProvidedByEntitlement[name] { return value } }
        return sampleContentProvided
    }

    /// How much of the purchase was used when the customer asked, in milliunits: for a
    /// non-renewing subscription the share of its term elapsed; nil where Signet cannot know
    /// (consumables and non-consumables: the app knows).
    func consumption(of purchase: SubscriptionSnapshot, type: TransactionType, at instant: Int64) -> Int? {
        guard type == .nonRenewingSubscription, let start = purchase.purchaseDate, let end = purchase.expiresDate, end > start else {
            return nil
        }
        let elapsed = Double(min(max(instant - start, 0), end - start)) / Double(end - start)
        return Int((elapsed * Double(ConsumptionInformation.fullyConsumed)).rounded())
    }

    static func v1ConsumptionStatus(_ percentage: Int?) -> Int {
        guard let percentage else { return 0 }
        return percentage == 0 ? 1 : percentage >= ConsumptionInformation.fullyConsumed ? 3 : 2
    }

    static func v1DeliveryStatus(_ status: ConsumptionInformation.DeliveryStatus) -> Int {
        switch status {
        case .delivered: 0
        case .undeliveredQualityIssue: 1
        case .undeliveredWrongItem: 2
        case .undeliveredServerOutage: 3
        case .undeliveredOther: 5
        }
    }

    static func v1RefundPreference(_ preference: ConsumptionInformation.RefundPreference) -> Int {
        switch preference {
        case .grantFull, .grantProrated: 1
        case .decline: 2
        }
    }
}

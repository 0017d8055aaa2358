import Foundation
import SignetCore
public import SignetState

/// One rule of the `retention:` policy: when every condition holds for the customer's
/// purchase and the request, Apple is answered with ``answer``.
///
/// An absent condition matches everything. Conditions on the purchase (`state`,
/// `entitlement`, `refunded`, `tenure_months`) read Signet's stored snapshot,
/// `refund_requested` its refund questions, `frequency_cap` its record of answers; `product`, `locale` and
/// `environment` read the verified request.
public struct RetentionRule: Sendable, Hashable {
    /// The rule's name: in metrics (`signet_retention_requests_total{reason}`), logs and reports.
    public var name: String
    /// Product ids (a pattern ending in `*` matches by prefix); nil: any.
    public var products: [String]?
    /// Entitlement names, any of which the purchase's product must grant; nil: any.
    public var entitlements: Set<String>?
    /// Purchase states (`active`, `grace_period`, `billing_retry`, ...); nil: any.
    public var states: Set<SubscriptionState>?
    /// Whether the purchase was refunded or revoked (a revocation date on its latest
    /// transaction); nil: either.
    public var refunded: Bool?
    /// Whether Apple asked a refund question (CONSUMPTION_REQUEST) about any of the purchase's
    /// transactions, whatever came of it; nil: either.
    public var refundRequested: Bool?
    /// Whether the rule is for customers who withdrew consent (a RESCIND_CONSENT in force for
    /// the purchase's app transaction). False, the default, never matches them.
    public var consentRestricted: Bool
    /// App Store locales (`en-US`, case-sensitive as Apple sends them); nil: any.
    public var locales: Set<String>?
    /// `Production`, `Sandbox`; nil: any.
    public var environments: Set<String>?
    /// Whole months subscribed (since the renewal info's `recentSubscriptionStartDate`), within
    /// these bounds, either open; nil: any. A purchase whose start Signet does not know never matches.
    public var tenureMonths: RetentionTenure?
    /// At most this many answers to one purchase in a window; nil: no cap.
    public var frequencyCap: RetentionFrequencyCap?
    /// What Apple is answered with when the rule matches.
    public var answer: RetentionAnswer

    /// A rule answering `answer` when every given condition holds.
    public init(
        name: String, products: [String]? = nil, entitlements: Set<String>? = nil, states: Set<SubscriptionState>? = nil,
        refunded: Bool? = nil, refundRequested: Bool? = nil, consentRestricted: Bool = false, locales: Set<String>? = nil, environments: Set<String>? = nil,
        tenureMonths: RetentionTenure? = nil, frequencyCap: RetentionFrequencyCap? = nil, answer: RetentionAnswer
    ) {
        self.name = name
        self.products = products
        self.entitlements = entitlements
        self.states = states
        self.refunded = refunded
        self.refundRequested = refundRequested
        self.consentRestricted = consentRestricted
        self.locales = locales
        self.environments = environments
        self.tenureMonths = tenureMonths
        self.frequencyCap = frequencyCap
        self.answer = answer
    }

    /// Whether the rule holds for this customer.
    func matches(_ facts: RetentionFacts) -> Bool {
        if consentRestricted != facts.consentRestricted { return false }
        if let products {
            guard products.contains(where: { FanoutRoute.product(facts.productId, matches: $0) }) else { return false }
        }
        if let locales, !locales.contains(facts.locale) { return false }
        if let environments, !environments.contains(facts.environment) { return false }
        if let states, !states.contains(facts.state) { return false }
        if let refunded, refunded != facts.refunded { return false }
        if let refundRequested, refundRequested != facts.refundRequested { return false }
        if let entitlements, entitlements.isDisjoint(with: facts.entitlements) { return false }
        if let tenureMonths {
            guard let months = facts.tenureMonths, tenureMonths.contains(months) else { return false }
        }
        if let frequencyCap, frequencyCap.reached(by: facts.shown, rule: name, at: facts.now) { return false }
        return true
    }
}

/// A rule's tenure bounds, in whole months subscribed; either may be open.
public struct RetentionTenure: Sendable, Hashable {
    /// At least this many months; nil: no lower bound.
    public var min: Int?
    /// At most this many months; nil: no upper bound.
    public var max: Int?

    /// Between `min` and `max` months, both included.
    public init(min: Int? = nil, max: Int? = nil) {
        self.min = min
        self.max = max
    }

    func contains(_ months: Int) -> Bool {
        months >= (min ?? Int.min) && months <= (max ?? Int.max)
    }

    /// Whole calendar months (UTC) from `start` to `now` (ms since 1970); 0 within the first.
    static func months(from start: Int64, to now: Int64) -> Int {
        guard now > start else { return 0 }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = calendar.dateComponents(
            [.month], from: Date(timeIntervalSince1970: Double(start) / 1000), to: Date(timeIntervalSince1970: Double(now) / 1000))
        return Swift.max(0, components.month ?? 0)
    }
}

/// A rule's frequency cap: the rule stops matching a purchase once `max` answers were given
/// to it within `within` (answers of this rule, or of any rule with `acrossRules`). The
/// default message never counts: it offers nothing.
public struct RetentionFrequencyCap: Sendable, Hashable {
    /// Answers allowed in the window.
    public var max: Int
    /// The window, back from the request.
    public var within: Duration
    /// Count every rule's answers, not only this rule's.
    public var acrossRules: Bool

    /// At most `max` answers within `within`, of this rule or (`acrossRules`) of any.
    public init(max: Int, within: Duration, acrossRules: Bool = false) {
        self.max = max
        self.within = within
        self.acrossRules = acrossRules
    }

    /// Whether `shown` (the purchase's earlier answers) reaches the cap at `now` (ms since 1970).
    func reached(by shown: [RetentionOfferRecord], rule: String, at now: Int64) -> Bool {
        let since = now - within.clampedMilliseconds
        let count = shown.lazy.filter { record in
            guard let answered = record.rule, record.answeredAt >= since else { return false }
            return acrossRules || answered == rule
        }.count
        return count >= max
    }
}

/// What the rules are judged on: the verified request and the stored purchase.
struct RetentionFacts: Sendable {
    /// The request's product (the subscription the customer may cancel).
    var productId: String
    var locale: String
    var environment: String
    var state: SubscriptionState
    var refunded: Bool
    /// Whether Apple asked a refund question about the purchase (read only when a rule asks).
    var refundRequested = false
    var consentRestricted: Bool
    /// The entitlement names the purchase's product grants.
    var entitlements: Set<String>
    /// The purchase's earlier answers within the policy's widest frequency cap (else none).
    var shown: [RetentionOfferRecord] = []
    /// When the request is decided (ms since 1970).
    var now: Int64
    /// Whole months subscribed as of ``now`` (from the renewal info's
    /// `recentSubscriptionStartDate`); nil when the start is not known.
    var tenureMonths: Int?

    init(request productId: String, locale: String, environment: String, snapshot: SubscriptionSnapshot,
         consentRestricted: Bool, names: EntitlementNames, now: Int64) {
        self.now = now
        tenureMonths = snapshot.recentSubscriptionStartDate.map { RetentionTenure.months(from: $0, to: now) }
        self.productId = productId
        self.locale = locale
        self.environment = environment
        state = snapshot.state
        refunded = snapshot.revocationDate != nil || snapshot.state == .refunded || snapshot.state == .revoked
        self.consentRestricted = consentRestricted
        entitlements = Set(names.names(productId: snapshot.productId, subscriptionGroupId: snapshot.subscriptionGroupIdentifier))
    }
}

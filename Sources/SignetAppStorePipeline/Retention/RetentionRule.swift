public import SignetState

/// One rule of the `retention:` policy: when every condition holds for the customer's
/// purchase and the request, Apple is answered with ``answer``.
///
/// An absent condition matches everything. Conditions on the purchase (`state`,
/// `entitlement`, `refunded`) read Signet's stored snapshot; `product`, `locale` and
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
    /// Whether the rule is for customers who withdrew consent (a RESCIND_CONSENT in force for
    /// the purchase's app transaction). False, the default, never matches them.
    public var consentRestricted: Bool
    /// App Store locales (`en-US`, case-sensitive as Apple sends them); nil: any.
    public var locales: Set<String>?
    /// `Production`, `Sandbox`; nil: any.
    public var environments: Set<String>?
    /// What Apple is answered with when the rule matches.
    public var answer: RetentionAnswer

    /// A rule answering `answer` when every given condition holds.
    public init(
        name: String, products: [String]? = nil, entitlements: Set<String>? = nil, states: Set<SubscriptionState>? = nil,
        refunded: Bool? = nil, consentRestricted: Bool = false, locales: Set<String>? = nil, environments: Set<String>? = nil,
        answer: RetentionAnswer
    ) {
        self.name = name
        self.products = products
        self.entitlements = entitlements
        self.states = states
        self.refunded = refunded
        self.consentRestricted = consentRestricted
        self.locales = locales
        self.environments = environments
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
        if let entitlements, entitlements.isDisjoint(with: facts.entitlements) { return false }
        return true
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
    var consentRestricted: Bool
    /// The entitlement names the purchase's product grants.
    var entitlements: Set<String>

    init(request productId: String, locale: String, environment: String, snapshot: SubscriptionSnapshot,
         consentRestricted: Bool, names: EntitlementNames) {
        self.productId = productId
        self.locale = locale
        self.environment = environment
        state = snapshot.state
        refunded = snapshot.revocationDate != nil || snapshot.state == .refunded || snapshot.state == .revoked
        self.consentRestricted = consentRestricted
        entitlements = Set(names.names(productId: snapshot.productId, subscriptionGroupId: snapshot.subscriptionGroupIdentifier))
    }
}

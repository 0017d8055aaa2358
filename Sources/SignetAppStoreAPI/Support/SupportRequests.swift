import Foundation

/// Why a renewal date is extended (Apple's `extendReasonCode`).
public enum ExtendReasonCode: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 0: no reason given.
    case undeclared = 0
    /// 1: customer satisfaction.
    case customerSatisfaction = 1
    /// 2: another reason.
    case other = 2
    /// 3: a service issue or outage.
    case serviceIssueOrOutage = 3

    /// The names `signet support` accepts: `undeclared`, `customer-satisfaction`, `other`, `service-issue`.
    public var name: String {
        switch self {
        case .undeclared: "undeclared"
        case .customerSatisfaction: "customer-satisfaction"
        case .other: "other"
        case .serviceIssueOrOutage: "service-issue"
        }
    }

    /// The code named `name` (as ``name`` spells it) or given as its number.
    public init?(name: String) {
        if let code = Int(name).flatMap(Self.init(rawValue:)) {
            self = code
            return
        }
        guard let code = Self.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = code
    }
}

/// Extend a Subscription Renewal Date's body (`ExtendRenewalDateRequest`).
public struct ExtendRenewalDateRequest: Sendable, Hashable, Codable {
    /// Days to move the renewal date by: 1 to 90.
    public var extendByDays: Int
    public var extendReasonCode: ExtendReasonCode
    /// Identifies the request: resend a timed-out request with the same one (at most 128 characters).
    public var requestIdentifier: String

    public init(extendByDays: Int, extendReasonCode: ExtendReasonCode, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }

    /// The request as sent: checked against Apple's limits (1...90 days, an identifier of
    /// 1...128 characters), an identifier that is a UUID lower-case (one request, however spelled).
    public func validated() throws(SupportCallError) -> Self {
        try SupportRules.days(extendByDays)
        var request = self
        request.requestIdentifier = try SupportRules.requestIdentifier(requestIdentifier, mustBeUUID: false)
        return request
    }
}

/// Extend Subscription Renewal Dates for All Active Subscribers' body (`MassExtendRenewalDateRequest`).
public struct MassExtendRenewalDateRequest: Sendable, Hashable, Codable {
    public var extendByDays: Int
    public var extendReasonCode: ExtendReasonCode
    /// A UUID (sent lower-case); the same one asks for the status and names Apple's SUMMARY notification.
    public var requestIdentifier: String
    /// The auto-renewable subscription whose active subscribers are extended.
    public var productId: String
    /// ISO 3166-1 alpha-3 storefronts (`USA`, `FRA`); nil: every storefront.
    public var storefrontCountryCodes: [String]?

    public init(
        extendByDays: Int, extendReasonCode: ExtendReasonCode, requestIdentifier: String, productId: String,
        storefrontCountryCodes: [String]? = nil
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
    }

    /// The request as sent: checked against Apple's rules, the identifier lower-case.
    public func validated() throws(SupportCallError) -> Self {
        try SupportRules.days(extendByDays)
        var request = self
        request.requestIdentifier = try SupportRules.requestIdentifier(requestIdentifier, mustBeUUID: true)
        guard !productId.isEmpty else { throw SupportCallError(.invalidProductId, field: "productId", "is empty") }
        if let codes = storefrontCountryCodes {
            guard !codes.isEmpty else {
                throw SupportCallError(.emptyStorefrontCountryCodes, field: "storefrontCountryCodes", "is empty; leave it out for every storefront")
            }
            for code in codes where !(code.utf8.count == 3 && code.utf8.allSatisfy { (65...90).contains($0) }) {
                throw SupportCallError(
                    .invalidStorefrontCountryCode, field: "storefrontCountryCodes", "'\(code)' is not an ISO 3166-1 alpha-3 code such as USA")
            }
        }
        return request
    }
}

/// Apple's documented limits, shared by the requests.
enum SupportRules {
    static func days(_ days: Int) throws(SupportCallError) {
        guard (1...90).contains(days) else {
            throw SupportCallError(.invalidExtendByDays, field: "extendByDays", "is \(days); Apple extends by 1 to 90 days")
        }
    }

    /// The identifier as sent: a UUID lower-case; any other text as given.
    @discardableResult
    static func requestIdentifier(_ identifier: String, mustBeUUID: Bool) throws(SupportCallError) -> String {
        guard !identifier.isEmpty, identifier.count <= 128 else {
            throw SupportCallError(
                .invalidRequestIdentifier, field: "requestIdentifier",
                identifier.isEmpty ? "is empty" : "has \(identifier.count) characters; at most 128")
        }
        if let uuid = UUID(uuidString: identifier) { return uuid.uuidString.lowercased() }
        guard !mustBeUUID else {
            throw SupportCallError(.invalidRequestIdentifier, field: "requestIdentifier", "'\(identifier)' is not a UUID")
        }
        return identifier
    }

    static func id(_ value: String, field: String) throws(SupportCallError) {
        guard !value.isEmpty else { throw SupportCallError(.invalidTransactionId, field: field, "is empty") }
    }
}

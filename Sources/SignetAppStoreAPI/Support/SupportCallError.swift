/// A support call (docs/support.md) that breaks one of Apple's documented rules, found before
/// anything was sent: Apple would refuse it, so the client does not send it.
public struct SupportCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule was broken; the raw value names the error Apple would answer, where it has one.
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// An empty transaction or order id.
        case invalidTransactionId = "InvalidTransactionIdError"
        /// `extendByDays` outside 1...90 (InvalidExtendByDaysError, 4000009).
        case invalidExtendByDays = "InvalidExtendByDaysError"
        /// `extendReasonCode` outside 0...3 (InvalidExtendReasonCodeError, 4000010).
        case invalidExtendReasonCode = "InvalidExtendReasonCodeError"
        /// A `requestIdentifier` empty or over 128 characters, or (mass extension and its status)
        /// not a UUID (InvalidRequestIdentifierError, 4000011).
        case invalidRequestIdentifier = "InvalidRequestIdentifierError"
        /// An empty product id (InvalidProductIdError, 4000023).
        case invalidProductId = "InvalidProductIdError"
        /// `storefrontCountryCodes` given but empty (InvalidEmptyStorefrontCountryCodeListError, 4000027).
        case emptyStorefrontCountryCodes = "InvalidEmptyStorefrontCountryCodeListError"
        /// A storefront code that is not ISO 3166-1 alpha-3 (InvalidStorefrontCountryCodeError, 4000028).
        case invalidStorefrontCountryCode = "InvalidStorefrontCountryCodeError"
        /// An appAccountToken that is not a UUID (InvalidAppAccountTokenUUIDError, 4000183).
        case invalidAppAccountToken = "InvalidAppAccountTokenUUIDError"
        /// Look Up Order ID asked of Sandbox, where Apple does not serve it.
        case notInSandbox = "NotAvailableInSandbox"
    }

    public var rule: Rule
    /// The field (or path parameter) the rule is about.
    public var field: String
    /// What the rule asks and what was given.
    public var message: String

    public init(_ rule: Rule, field: String, _ message: String) {
        self.rule = rule
        self.field = field
        self.message = message
    }

    public var description: String {
        rule == .notInSandbox ? "\(field) \(message)" : "\(field) \(message) (Apple would answer \(rule.rawValue))"
    }
}

/// A Send Consumption Information body that breaks one of Apple's documented rules, found
/// before anything was sent (``ConsumptionInformation/validate()``).
///
/// Apple would answer such a body 400; sending it anyway is a defect, so the client refuses.
public struct ConsumptionInformationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule was broken (docs/consumption.md lists each with its source).
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// `customerConsented` is not `true` (Apple: InvalidCustomerConsentedError, 4000035).
        case customerNotConsented = "customer_not_consented"
        /// The purchase's type is not one Apple documents: its percentage rules are unknown.
        case unknownProductType = "unknown_product_type"
        /// `consumptionPercentage` outside 0...100000 (Apple: ConsumptionPercentageOutOfRangeError).
        case percentageOutOfRange = "percentage_out_of_range"
        /// `consumptionPercentage` for an auto-renewable subscription (Apple:
        /// ConsumptionPercentageAutoRenewableSubscriptionError, 4000209).
        case percentageForAutoRenewable = "percentage_for_auto_renewable"
        /// `consumptionPercentage` other than 0 for an undelivered purchase (Apple:
        /// UndeliveredConsumptionPercentageNonZeroError).
        case percentageNotZeroWhenUndelivered = "percentage_not_zero_when_undelivered"
        /// `GRANT_PRORATED` without a `consumptionPercentage` strictly between 0 and 100000.
        case proratedNeedsPercentage = "prorated_needs_percentage"
        /// An empty transaction id (Apple: InvalidTransactionIdError, 4000006).
        case emptyTransactionId = "empty_transaction_id"
        /// V1: a coded field outside the codes Apple documents for it.
        case codeOutOfRange = "code_out_of_range"
        /// V1: an `appAccountToken` neither a UUID nor empty (Apple: InvalidAppAccountTokenError, 4000033).
        case invalidAppAccountToken = "invalid_app_account_token"
    }

    public var rule: Rule
    /// The body's key (or `transactionId`, `productType`) the rule is about.
    public var field: String
    /// What the rule asks and what the body had.
    public var message: String

    public init(_ rule: Rule, field: String, _ message: String) {
        self.rule = rule
        self.field = field
        self.message = message
    }

    /// `customerConsented` is not `true`: the same refusal for v2 and V1.
    static let notConsented = ConsumptionInformationError(
        .customerNotConsented, field: "customerConsented",
        "must be true: Apple rejects any other value, and without the customer's consent the request must not be answered at all")

    public var description: String { "Send Consumption Information: \(field) \(message) (\(rule.rawValue))" }
}

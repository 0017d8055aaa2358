/// Why an Advanced Commerce item was refunded.
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercerefundreason>
public struct AdvancedCommerceRefundReason: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `UNINTENDED_PURCHASE`: The customer did not mean to buy.
    public static let unintendedPurchase = AdvancedCommerceRefundReason(rawValue: "UNINTENDED_PURCHASE")
    /// `FULFILLMENT_ISSUE`: The item was not delivered or did not work.
    public static let fulfillmentIssue = AdvancedCommerceRefundReason(rawValue: "FULFILLMENT_ISSUE")
    /// `UNSATISFIED_WITH_PURCHASE`: The customer was not satisfied.
    public static let unsatisfiedWithPurchase = AdvancedCommerceRefundReason(rawValue: "UNSATISFIED_WITH_PURCHASE")
    /// `LEGAL`: A legal reason.
    public static let legal = AdvancedCommerceRefundReason(rawValue: "LEGAL")
    /// `OTHER`: Another reason.
    public static let other = AdvancedCommerceRefundReason(rawValue: "OTHER")
    /// `MODIFY_ITEMS_REFUND`: A refund caused by modifying the items of a subscription.
    public static let modifyItemsRefund = AdvancedCommerceRefundReason(rawValue: "MODIFY_ITEMS_REFUND")
    /// `SIMULATE_REFUND_DECLINE`: A sandbox-only value that simulates a declined refund.
    public static let simulateRefundDecline = AdvancedCommerceRefundReason(rawValue: "SIMULATE_REFUND_DECLINE")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AdvancedCommerceRefundReason] = [
        .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other, .modifyItemsRefund, .simulateRefundDecline,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AdvancedCommerceRefundReason: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AdvancedCommerceRefundReason: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

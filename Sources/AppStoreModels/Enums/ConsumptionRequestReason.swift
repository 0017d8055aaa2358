/// Why the customer requested a refund (`consumptionRequestReason`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/consumptionrequestreason>
public struct ConsumptionRequestReason: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `UNINTENDED_PURCHASE`: The customer did not mean to buy.
    public static let unintendedPurchase = ConsumptionRequestReason(rawValue: "UNINTENDED_PURCHASE")
    /// `FULFILLMENT_ISSUE`: The customer did not receive the item or could not use it.
    public static let fulfillmentIssue = ConsumptionRequestReason(rawValue: "FULFILLMENT_ISSUE")
    /// `UNSATISFIED_WITH_PURCHASE`: The customer was not satisfied.
    public static let unsatisfiedWithPurchase = ConsumptionRequestReason(rawValue: "UNSATISFIED_WITH_PURCHASE")
    /// `LEGAL`: A legal reason.
    public static let legal = ConsumptionRequestReason(rawValue: "LEGAL")
    /// `OTHER`: Another reason.
    public static let other = ConsumptionRequestReason(rawValue: "OTHER")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [ConsumptionRequestReason] = [
        .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension ConsumptionRequestReason: CustomStringConvertible {
    public var description: String { rawValue }
}

extension ConsumptionRequestReason: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

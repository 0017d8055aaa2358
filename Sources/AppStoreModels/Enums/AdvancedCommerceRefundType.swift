/// How much of an Advanced Commerce item was refunded.
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercerefundtype>
public struct AdvancedCommerceRefundType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `FULL`: A full refund.
    public static let full = AdvancedCommerceRefundType(rawValue: "FULL")
    /// `PRORATED`: A prorated refund.
    public static let prorated = AdvancedCommerceRefundType(rawValue: "PRORATED")
    /// `CUSTOM`: A custom amount.
    public static let custom = AdvancedCommerceRefundType(rawValue: "CUSTOM")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AdvancedCommerceRefundType] = [
        .full, .prorated, .custom,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AdvancedCommerceRefundType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AdvancedCommerceRefundType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// The state of a price increase on an Advanced Commerce item.
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercepriceincreaseinfostatus>
public struct AdvancedCommercePriceIncreaseStatus: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `SCHEDULED`: The price increase is scheduled.
    public static let scheduled = AdvancedCommercePriceIncreaseStatus(rawValue: "SCHEDULED")
    /// `PENDING`: The customer has not yet responded.
    public static let pending = AdvancedCommercePriceIncreaseStatus(rawValue: "PENDING")
    /// `ACCEPTED`: The customer accepted the price increase.
    public static let accepted = AdvancedCommercePriceIncreaseStatus(rawValue: "ACCEPTED")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AdvancedCommercePriceIncreaseStatus] = [
        .scheduled, .pending, .accepted,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AdvancedCommercePriceIncreaseStatus: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AdvancedCommercePriceIncreaseStatus: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

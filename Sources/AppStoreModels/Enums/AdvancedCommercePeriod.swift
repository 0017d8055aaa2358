/// The duration of an Advanced Commerce subscription period (ISO 8601 duration).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommerceperiod>
public struct AdvancedCommercePeriod: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `P1W`: One week.
    public static let p1W = AdvancedCommercePeriod(rawValue: "P1W")
    /// `P1M`: One month.
    public static let p1M = AdvancedCommercePeriod(rawValue: "P1M")
    /// `P2M`: Two months.
    public static let p2M = AdvancedCommercePeriod(rawValue: "P2M")
    /// `P3M`: Three months.
    public static let p3M = AdvancedCommercePeriod(rawValue: "P3M")
    /// `P6M`: Six months.
    public static let p6M = AdvancedCommercePeriod(rawValue: "P6M")
    /// `P1Y`: One year.
    public static let p1Y = AdvancedCommercePeriod(rawValue: "P1Y")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AdvancedCommercePeriod] = [
        .p1W, .p1M, .p2M, .p3M, .p6M, .p1Y,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AdvancedCommercePeriod: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AdvancedCommercePeriod: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

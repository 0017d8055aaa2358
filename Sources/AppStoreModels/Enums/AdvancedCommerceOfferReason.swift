/// Why an Advanced Commerce offer was given.
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommerceofferreason>
public struct AdvancedCommerceOfferReason: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `ACQUISITION`: To acquire a new customer.
    public static let acquisition = AdvancedCommerceOfferReason(rawValue: "ACQUISITION")
    /// `WIN_BACK`: To win back a former customer.
    public static let winBack = AdvancedCommerceOfferReason(rawValue: "WIN_BACK")
    /// `RETENTION`: To keep a current customer.
    public static let retention = AdvancedCommerceOfferReason(rawValue: "RETENTION")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AdvancedCommerceOfferReason] = [
        .acquisition, .winBack, .retention,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AdvancedCommerceOfferReason: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AdvancedCommerceOfferReason: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

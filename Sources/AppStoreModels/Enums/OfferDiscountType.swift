/// The payment mode of an offer (`offerDiscountType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/offerdiscounttype>
public struct OfferDiscountType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `FREE_TRIAL`: A free trial.
    public static let freeTrial = OfferDiscountType(rawValue: "FREE_TRIAL")
    /// `PAY_AS_YOU_GO`: A discounted price paid each period.
    public static let payAsYouGo = OfferDiscountType(rawValue: "PAY_AS_YOU_GO")
    /// `PAY_UP_FRONT`: A discounted price paid once up front.
    public static let payUpFront = OfferDiscountType(rawValue: "PAY_UP_FRONT")
    /// `ONE_TIME`: An In-App Purchase offer code on a one-time purchase.
    public static let oneTime = OfferDiscountType(rawValue: "ONE_TIME")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [OfferDiscountType] = [
        .freeTrial, .payAsYouGo, .payUpFront, .oneTime,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension OfferDiscountType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension OfferDiscountType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

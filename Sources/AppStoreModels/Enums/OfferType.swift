/// The type of subscription offer (`offerType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/offertype>
public struct OfferType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `1`: An introductory offer.
    public static let introductoryOffer = OfferType(rawValue: 1)
    /// `2`: A promotional offer.
    public static let promotionalOffer = OfferType(rawValue: 2)
    /// `3`: An offer code.
    public static let offerCode = OfferType(rawValue: 3)
    /// `4`: A win-back offer.
    public static let winBackOffer = OfferType(rawValue: 4)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [OfferType] = [
        .introductoryOffer, .promotionalOffer, .offerCode, .winBackOffer,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension OfferType: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension OfferType: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

/// Whether the customer responded to a subscription price increase (`priceIncreaseStatus`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/priceincreasestatus>
public struct PriceIncreaseStatus: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `0`: The customer has not responded to a price increase that needs consent.
    public static let customerHasNotResponded = PriceIncreaseStatus(rawValue: 0)
    /// `1`: The customer consented, or was notified of an increase that needs no consent.
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = PriceIncreaseStatus(rawValue: 1)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [PriceIncreaseStatus] = [
        .customerHasNotResponded, .customerConsentedOrWasNotifiedWithoutNeedingConsent,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension PriceIncreaseStatus: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension PriceIncreaseStatus: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

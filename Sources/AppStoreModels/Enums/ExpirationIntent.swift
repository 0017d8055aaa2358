/// Why a subscription expired (`expirationIntent`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/expirationintent>
public struct ExpirationIntent: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `1`: The customer canceled.
    public static let customerCancelled = ExpirationIntent(rawValue: 1)
    /// `2`: A billing error.
    public static let billingError = ExpirationIntent(rawValue: 2)
    /// `3`: The customer did not consent to a price increase.
    public static let customerDidNotConsentToPriceIncrease = ExpirationIntent(rawValue: 3)
    /// `4`: The product was not available at renewal time.
    public static let productNotAvailable = ExpirationIntent(rawValue: 4)
    /// `5`: Another reason.
    public static let other = ExpirationIntent(rawValue: 5)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [ExpirationIntent] = [
        .customerCancelled, .billingError, .customerDidNotConsentToPriceIncrease, .productNotAvailable, .other,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension ExpirationIntent: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension ExpirationIntent: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

/// The status of an auto-renewable subscription when the notification was sent (`status`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/status>
public struct SubscriptionStatus: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `1`: The subscription is active.
    public static let active = SubscriptionStatus(rawValue: 1)
    /// `2`: The subscription expired.
    public static let expired = SubscriptionStatus(rawValue: 2)
    /// `3`: The subscription is in the billing retry period.
    public static let billingRetry = SubscriptionStatus(rawValue: 3)
    /// `4`: The subscription is in the billing grace period.
    public static let billingGracePeriod = SubscriptionStatus(rawValue: 4)
    /// `5`: The subscription was revoked.
    public static let revoked = SubscriptionStatus(rawValue: 5)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [SubscriptionStatus] = [
        .active, .expired, .billingRetry, .billingGracePeriod, .revoked,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension SubscriptionStatus: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension SubscriptionStatus: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

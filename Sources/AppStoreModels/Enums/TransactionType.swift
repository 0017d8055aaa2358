/// The kind of in-app purchase a transaction is for (`type`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/type>
public struct TransactionType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `Auto-Renewable Subscription`: An auto-renewable subscription.
    public static let autoRenewableSubscription = TransactionType(rawValue: "Auto-Renewable Subscription")
    /// `Non-Consumable`: A non-consumable in-app purchase.
    public static let nonConsumable = TransactionType(rawValue: "Non-Consumable")
    /// `Consumable`: A consumable in-app purchase.
    public static let consumable = TransactionType(rawValue: "Consumable")
    /// `Non-Renewing Subscription`: A non-renewing subscription.
    public static let nonRenewingSubscription = TransactionType(rawValue: "Non-Renewing Subscription")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [TransactionType] = [
        .autoRenewableSubscription, .nonConsumable, .consumable, .nonRenewingSubscription,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension TransactionType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension TransactionType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

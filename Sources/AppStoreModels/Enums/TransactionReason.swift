/// Whether a transaction is a customer purchase or a system renewal (`transactionReason`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/transactionreason>
public struct TransactionReason: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `PURCHASE`: The customer initiated the purchase (including upgrades, offers and restores).
    public static let purchase = TransactionReason(rawValue: "PURCHASE")
    /// `RENEWAL`: The App Store renewed the auto-renewable subscription.
    public static let renewal = TransactionReason(rawValue: "RENEWAL")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [TransactionReason] = [
        .purchase, .renewal,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension TransactionReason: CustomStringConvertible {
    public var description: String { rawValue }
}

extension TransactionReason: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

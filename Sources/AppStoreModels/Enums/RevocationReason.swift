/// Why the App Store refunded or revoked a transaction (`revocationReason`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/revocationreason>
public struct RevocationReason: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `0`: Refunded for another reason, such as an accidental purchase.
    public static let refundedForOtherReason = RevocationReason(rawValue: 0)
    /// `1`: Refunded because of an actual or perceived issue in the app.
    public static let refundedDueToIssue = RevocationReason(rawValue: 1)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [RevocationReason] = [
        .refundedForOtherReason, .refundedDueToIssue,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension RevocationReason: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension RevocationReason: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

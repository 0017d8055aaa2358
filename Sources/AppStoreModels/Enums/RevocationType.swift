/// How a transaction was revoked (`revocationType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/revocationtype>
public struct RevocationType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `REFUND_FULL`: The whole transaction was refunded.
    public static let refundFull = RevocationType(rawValue: "REFUND_FULL")
    /// `REFUND_PRORATED`: Part of the transaction was refunded; see revocationPercentage.
    public static let refundProrated = RevocationType(rawValue: "REFUND_PRORATED")
    /// `FAMILY_REVOKE`: Family Sharing access was revoked.
    public static let familyRevoke = RevocationType(rawValue: "FAMILY_REVOKE")
    /// `ASSIGNMENT_REVOKE`: the organization's administrator revoked an assigned seat of a
    /// multiseat purchase (App Store Server API 1.22). Not a refund.
    public static let assignmentRevoke = RevocationType(rawValue: "ASSIGNMENT_REVOKE")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [RevocationType] = [
        .refundFull, .refundProrated, .familyRevoke, .assignmentRevoke,
    ]

    /// Whether access was taken away rather than paid back: a Family Sharing or an assigned
    /// seat's revocation (`revoked`), not a refund (`refunded`).
    public var isAccessRevocation: Bool { self == .familyRevoke || self == .assignmentRevoke }

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension RevocationType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension RevocationType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// Whether the customer bought the item or has it through Family Sharing (`inAppOwnershipType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/inappownershiptype>
public struct InAppOwnershipType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `FAMILY_SHARED`: The customer has access through Family Sharing.
    public static let familyShared = InAppOwnershipType(rawValue: "FAMILY_SHARED")
    /// `PURCHASED`: The customer bought the item.
    public static let purchased = InAppOwnershipType(rawValue: "PURCHASED")
    /// `ASSIGNED`: the customer's organization assigned them a seat of a multiseat purchase
    /// (App Store Server API 1.22).
    public static let assigned = InAppOwnershipType(rawValue: "ASSIGNED")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [InAppOwnershipType] = [
        .familyShared, .purchased, .assigned,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension InAppOwnershipType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension InAppOwnershipType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

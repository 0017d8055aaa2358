/// The kind of external purchase custom link token (`tokenType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/tokentype>
public struct ExternalPurchaseTokenType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `SERVICES`: A token for services offered to existing customers.
    public static let services = ExternalPurchaseTokenType(rawValue: "SERVICES")
    /// `ACQUISITION`: A token for acquiring new customers.
    public static let acquisition = ExternalPurchaseTokenType(rawValue: "ACQUISITION")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [ExternalPurchaseTokenType] = [
        .services, .acquisition,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension ExternalPurchaseTokenType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension ExternalPurchaseTokenType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// Whether an auto-renewable subscription renews at the end of its period (`autoRenewStatus`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/autorenewstatus>
public struct AutoRenewStatus: RawRepresentable, Hashable, Sendable, Codable, JSONOpenIntValue {
    /// The raw JSON value.
    public let rawValue: Int

    /// Wraps any raw value, documented or not.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `0`: Auto-renew is off.
    public static let off = AutoRenewStatus(rawValue: 0)
    /// `1`: Auto-renew is on.
    public static let on = AutoRenewStatus(rawValue: 1)

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AutoRenewStatus] = [
        .off, .on,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AutoRenewStatus: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

extension AutoRenewStatus: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

/// The server environment that signed a payload (`environment`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/environment>
public struct AppStoreEnvironment: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `Production`: The production App Store.
    public static let production = AppStoreEnvironment(rawValue: "Production")
    /// `Sandbox`: The sandbox test environment.
    public static let sandbox = AppStoreEnvironment(rawValue: "Sandbox")
    /// `Xcode`: StoreKit Testing in Xcode (self-signed, never trusted for real money).
    public static let xcode = AppStoreEnvironment(rawValue: "Xcode")
    /// `LocalTesting`: Local tests of the server libraries (signature checks are skipped).
    public static let localTesting = AppStoreEnvironment(rawValue: "LocalTesting")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [AppStoreEnvironment] = [
        .production, .sandbox, .xcode, .localTesting,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension AppStoreEnvironment: CustomStringConvertible {
    public var description: String { rawValue }
}

extension AppStoreEnvironment: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

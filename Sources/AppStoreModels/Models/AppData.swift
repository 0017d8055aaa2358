/// App information in notifications that are not about a transaction.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/appdata>
public struct AppData: Hashable, Sendable, Codable {
    /// The App Store identifier of the app.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The environment the notification applies to.
    public var environment: AppStoreEnvironment?
    /// The app transaction as a JWS.
    public var signedAppTransactionInfo: String?

    /// Creates a value; every field defaults to absent.
    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedAppTransactionInfo: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case appAppleId
        case bundleId
        case environment
        case signedAppTransactionInfo
    }
}

extension AppData: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        self.init()
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .appAppleId: appAppleId = try reader.int64()
            case .bundleId: bundleId = try reader.string()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .signedAppTransactionInfo: signedAppTransactionInfo = try reader.string()
            }
        }
    }
}

/// The outcome of extending renewal dates for all eligible subscribers.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/summary>
public struct NotificationSummary: Hashable, Sendable, Codable {
    /// The identifier of the extension request.
    public var requestIdentifier: String?
    /// The environment of the request.
    public var environment: AppStoreEnvironment?
    /// The App Store identifier of the app.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The product whose subscribers were extended.
    public var productId: String?
    /// The storefronts (ISO 3166-1 alpha-3) the extension applied to.
    public var storefrontCountryCodes: [String]?
    /// How many subscriptions could not be extended.
    public var failedCount: Int64?
    /// How many subscriptions were extended.
    public var succeededCount: Int64?

    /// Creates a value; every field defaults to absent.
    public init(
        requestIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        storefrontCountryCodes: [String]? = nil,
        failedCount: Int64? = nil,
        succeededCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
        self.failedCount = failedCount
        self.succeededCount = succeededCount
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case requestIdentifier
        case environment
        case appAppleId
        case bundleId
        case productId
        case storefrontCountryCodes
        case failedCount
        case succeededCount
    }
}

extension NotificationSummary: JSONFastDecodable {
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
            case .requestIdentifier: requestIdentifier = try reader.string()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .appAppleId: appAppleId = try reader.int64()
            case .bundleId: bundleId = try reader.string()
            case .productId: productId = try reader.string()
            case .storefrontCountryCodes: storefrontCountryCodes = try reader.stringArray()
            case .failedCount: failedCount = try reader.int64()
            case .succeededCount: succeededCount = try reader.int64()
            }
        }
    }
}

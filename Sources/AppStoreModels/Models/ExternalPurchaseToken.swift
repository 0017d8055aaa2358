/// An External Purchase API token that the App Store reports in a notification.
///
/// The payload carries no `environment` field: ``environment`` derives it from the identifier, as Apple's library does.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken>
public struct ExternalPurchaseToken: Hashable, Sendable, Codable {
    /// The identifier of the token; sandbox tokens start with `SANDBOX`.
    public var externalPurchaseId: String?
    /// When the token was created, in milliseconds since 1970 (a plain integer, as Apple documents it).
    public var tokenCreationDate: Int64?
    /// The App Store identifier of the app.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The kind of custom link token.
    public var tokenType: ExternalPurchaseTokenType?
    /// When the token expires, in milliseconds since 1970.
    public var tokenExpirationDate: Int64?

    /// Creates a value; every field defaults to absent.
    public init(
        externalPurchaseId: String? = nil,
        tokenCreationDate: Int64? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        tokenType: ExternalPurchaseTokenType? = nil,
        tokenExpirationDate: Int64? = nil
    ) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.tokenType = tokenType
        self.tokenExpirationDate = tokenExpirationDate
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case externalPurchaseId
        case tokenCreationDate
        case appAppleId
        case bundleId
        case tokenType
        case tokenExpirationDate
    }
}

extension ExternalPurchaseToken: JSONFastDecodable {
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
            case .externalPurchaseId: externalPurchaseId = try reader.string()
            case .tokenCreationDate: tokenCreationDate = try reader.int64()
            case .appAppleId: appAppleId = try reader.int64()
            case .bundleId: bundleId = try reader.string()
            case .tokenType: tokenType = try reader.stringValue(ExternalPurchaseTokenType.self)
            case .tokenExpirationDate: tokenExpirationDate = try reader.int64()
            }
        }
    }
}

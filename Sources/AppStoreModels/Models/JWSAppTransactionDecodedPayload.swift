/// The app transaction Apple signs into `appData.signedAppTransactionInfo`: the customer's
/// download of the app, which app-level notifications (RESCIND_CONSENT) are about.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/jwsapptransactiondecodedpayload>
public struct JWSAppTransactionDecodedPayload: Hashable, Sendable, Codable {
    /// The environment the app was downloaded in (`Production`, `Sandbox`, or a value Apple adds).
    public var receiptType: AppStoreEnvironment?
    /// The App Store identifier of the app.
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The app version that created the app transaction.
    public var applicationVersion: String?
    /// The version of the app in the App Store.
    public var versionExternalIdentifier: Int64?
    /// When Apple created the app transaction.
    public var receiptCreationDate: AppleTimestamp?
    /// When the customer first downloaded the app.
    public var originalPurchaseDate: AppleTimestamp?
    /// The app version the customer first downloaded.
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    /// When the customer pre-ordered the app, if they did.
    public var preorderDate: AppleTimestamp?
    /// The customer's download of the app, across devices and reinstalls: what the
    /// `appTransactionId` of their transactions and renewal infos names.
    public var appTransactionId: String?
    /// The platform the customer first downloaded the app on (`iOS`, `macOS`, `tvOS`, `visionOS`).
    public var originalPlatform: String?
    /// When Apple signed it, where present.
    public var signedDate: AppleTimestamp?

    /// Creates a value; every field defaults to absent.
    public init(
        receiptType: AppStoreEnvironment? = nil,
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        receiptCreationDate: AppleTimestamp? = nil,
        originalPurchaseDate: AppleTimestamp? = nil,
        appTransactionId: String? = nil,
        originalPlatform: String? = nil,
        signedDate: AppleTimestamp? = nil
    ) {
        self.receiptType = receiptType
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.receiptCreationDate = receiptCreationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.appTransactionId = appTransactionId
        self.originalPlatform = originalPlatform
        self.signedDate = signedDate
    }

    /// The instant its certificate chain is judged at: its `signedDate`, else (as Apple's
    /// libraries do) `receiptCreationDate`.
    public var effectiveSignedDate: AppleTimestamp? { signedDate ?? receiptCreationDate }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case receiptType
        case appAppleId
        case bundleId
        case applicationVersion
        case versionExternalIdentifier
        case receiptCreationDate
        case originalPurchaseDate
        case originalApplicationVersion
        case deviceVerification
        case deviceVerificationNonce
        case preorderDate
        case appTransactionId
        case originalPlatform
        case signedDate
    }
}

extension JWSAppTransactionDecodedPayload: JSONFastDecodable {
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
            case .receiptType: receiptType = try reader.stringValue(AppStoreEnvironment.self)
            case .appAppleId: appAppleId = try reader.int64()
            case .bundleId: bundleId = try reader.string()
            case .applicationVersion: applicationVersion = try reader.string()
            case .versionExternalIdentifier: versionExternalIdentifier = try reader.int64()
            case .receiptCreationDate: receiptCreationDate = try reader.timestamp()
            case .originalPurchaseDate: originalPurchaseDate = try reader.timestamp()
            case .originalApplicationVersion: originalApplicationVersion = try reader.string()
            case .deviceVerification: deviceVerification = try reader.string()
            case .deviceVerificationNonce: deviceVerificationNonce = try reader.string()
            case .preorderDate: preorderDate = try reader.timestamp()
            case .appTransactionId: appTransactionId = try reader.string()
            case .originalPlatform: originalPlatform = try reader.string()
            case .signedDate: signedDate = try reader.timestamp()
            }
        }
    }
}

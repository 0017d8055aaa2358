/// What the App Store asks a developer's Get Retention Message endpoint in real time, when a
/// customer viewing a subscription may cancel it: the payload of a `RealtimeRequestBody`'s
/// `signedPayload`.
///
/// Apple documents every field as required; here each is optional so that a payload missing
/// one decodes, and the verifier says which is missing (`malformed_payload`) instead of
/// failing to decode. Unlike a notification it carries no bundle id: `appAppleId` is the only
/// claim naming the app. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/retentionmessaging/decodedrealtimerequestbody>
public struct DecodedRealtimeRequestBody: Hashable, Sendable, Codable {
    /// The original transaction identifier of the customer's subscription.
    public var originalTransactionId: String?
    /// The App Store identifier of the app: a request for another app is never answered.
    public var appAppleId: Int64?
    /// The auto-renewable subscription the customer is viewing.
    public var productId: String?
    /// The device's locale (case-sensitive, e.g. `en-US`).
    public var userLocale: String?
    /// A UUID the App Store creates for each request, in the case Apple wrote it.
    public var requestIdentifier: String?
    /// The server environment: `Sandbox` or `Production`.
    public var environment: AppStoreEnvironment?
    /// When the App Store signed the request.
    public var signedDate: AppleTimestamp?

    /// Creates a value; every field defaults to absent.
    public init(
        originalTransactionId: String? = nil, appAppleId: Int64? = nil, productId: String? = nil, userLocale: String? = nil,
        requestIdentifier: String? = nil, environment: AppStoreEnvironment? = nil, signedDate: AppleTimestamp? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }

    /// The fields Apple documents as required that this payload lacks, by name (empty when
    /// complete).
    public var missingFields: [String] {
        var missing: [String] = []
        if originalTransactionId?.isEmpty ?? true { missing.append("originalTransactionId") }
        if appAppleId == nil { missing.append("appAppleId") }
        if productId?.isEmpty ?? true { missing.append("productId") }
        if userLocale == nil { missing.append("userLocale") }
        if requestIdentifier?.isEmpty ?? true { missing.append("requestIdentifier") }
        if environment == nil { missing.append("environment") }
        if signedDate == nil { missing.append("signedDate") }
        return missing
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case originalTransactionId
        case appAppleId
        case productId
        case userLocale
        case requestIdentifier
        case environment
        case signedDate
    }
}

extension DecodedRealtimeRequestBody: JSONFastDecodable {
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
            case .originalTransactionId: originalTransactionId = try reader.string()
            case .appAppleId: appAppleId = try reader.int64()
            case .productId: productId = try reader.string()
            case .userLocale: userLocale = try reader.string()
            case .requestIdentifier: requestIdentifier = try reader.string()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .signedDate: signedDate = try reader.timestamp()
            }
        }
    }
}

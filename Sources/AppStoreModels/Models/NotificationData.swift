/// App metadata and the signed transaction and renewal information of a notification.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/data>
public struct NotificationData: Hashable, Sendable, Codable {
    /// The App Store identifier of the app (absent in sandbox).
    public var appAppleId: Int64?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The build version of the app.
    public var bundleVersion: String?
    /// The environment the notification applies to.
    public var environment: AppStoreEnvironment?
    /// The transaction as a JWS; decode its payload as ``JWSTransactionDecodedPayload`` after verifying it.
    public var signedTransactionInfo: String?
    /// The subscription renewal information as a JWS (auto-renewable subscriptions only).
    public var signedRenewalInfo: String?
    /// The subscription's status when the notification was sent.
    public var status: SubscriptionStatus?
    /// Why the customer requested a refund (`CONSUMPTION_REQUEST` only).
    public var consumptionRequestReason: ConsumptionRequestReason?

    /// Creates a value; every field defaults to absent.
    public init(
        appAppleId: Int64? = nil,
        bundleId: String? = nil,
        bundleVersion: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: SubscriptionStatus? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.bundleVersion = bundleVersion
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case appAppleId
        case bundleId
        case bundleVersion
        case environment
        case signedTransactionInfo
        case signedRenewalInfo
        case status
        case consumptionRequestReason
    }
}

extension NotificationData: JSONFastDecodable {
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
            case .bundleVersion: bundleVersion = try reader.string()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .signedTransactionInfo: signedTransactionInfo = try reader.string()
            case .signedRenewalInfo: signedRenewalInfo = try reader.string()
            case .status: status = try reader.intValue(SubscriptionStatus.self)
            case .consumptionRequestReason: consumptionRequestReason = try reader.stringValue(ConsumptionRequestReason.self)
            }
        }
    }
}

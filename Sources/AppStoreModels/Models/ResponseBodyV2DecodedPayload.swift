/// The decoded payload of a version 2 App Store server notification.
///
/// One of `data`, `summary`, `externalPurchaseToken` or `appData` is present, depending on the notification type.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload>
public struct ResponseBodyV2DecodedPayload: Hashable, Sendable, Codable {
    /// The event that caused the notification.
    public var notificationType: NotificationType?
    /// Further detail on the event; absent for many types.
    public var subtype: Subtype?
    /// A unique identifier of the notification; retries of the same notification repeat it.
    public var notificationUUID: String?
    /// The App Store Server Notifications version, `"2.0"`.
    public var version: String?
    /// When the App Store signed the notification.
    public var signedDate: AppleTimestamp?
    /// App and transaction data, for notifications about a customer's purchase.
    public var data: NotificationData?
    /// The result of a renewal-date extension for all subscribers (`RENEWAL_EXTENSION` / `SUMMARY`).
    public var summary: NotificationSummary?
    /// The token of an `EXTERNAL_PURCHASE_TOKEN` notification.
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// App data of notifications not tied to a transaction, such as `RESCIND_CONSENT`.
    public var appData: AppData?

    /// Creates a value; every field defaults to absent.
    public init(
        notificationType: NotificationType? = nil,
        subtype: Subtype? = nil,
        notificationUUID: String? = nil,
        version: String? = nil,
        signedDate: AppleTimestamp? = nil,
        data: NotificationData? = nil,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case notificationType
        case subtype
        case notificationUUID
        case version
        case signedDate
        case data
        case summary
        case externalPurchaseToken
        case appData
    }
}

extension ResponseBodyV2DecodedPayload: JSONFastDecodable {
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
            case .notificationType: notificationType = try reader.stringValue(NotificationType.self)
            case .subtype: subtype = try reader.stringValue(Subtype.self)
            case .notificationUUID: notificationUUID = try reader.string()
            case .version: version = try reader.string()
            case .signedDate: signedDate = try reader.timestamp()
            case .data: data = try reader.object(NotificationData.self)
            case .summary: summary = try reader.object(NotificationSummary.self)
            case .externalPurchaseToken: externalPurchaseToken = try reader.object(ExternalPurchaseToken.self)
            case .appData: appData = try reader.object(AppData.self)
            }
        }
    }
}

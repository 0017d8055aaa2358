public import AppStoreModels
import SignetCore
import Foundation

/// One realistic, unsigned App Store Server Notification V2 with the payloads it carries.
///
/// The nested payloads are plain JSON (`JWSTransactionDecodedPayload`,
/// `JWSRenewalInfoDecodedPayload`, app transaction); a signer turns each into a compact JWS
/// and passes the results to ``notificationJSON(signedTransactionInfo:signedRenewalInfo:signedAppTransactionInfo:)``,
/// which renders the outer notification payload around them. All identifiers, dates,
/// bundle id and environment agree across the three payloads and the properties below.
public struct SampleNotification: Sendable, Hashable {
    /// The notification type and subtype.
    public let combination: NotificationCombination
    /// `notificationUUID` of the notification.
    public let notificationUUID: String
    /// `signedDate` of the notification and of its nested payloads.
    public let signedDate: AppleTimestamp
    /// The environment written into every payload.
    public let environment: AppStoreEnvironment
    /// The bundle identifier written into every payload.
    public let bundleId: String
    /// The app's Apple id, when the generator was given one.
    public let appAppleId: Int64?
    /// `originalTransactionId` of the nested transaction (nil when there is none).
    public let originalTransactionId: String?
    /// `transactionId` of the nested transaction.
    public let transactionId: String?
    /// `productId` of the nested transaction.
    public let productId: String?
    /// The app account token (a UUID string) of the nested transaction and renewal info.
    public let appAccountToken: String?
    /// `expiresDate` of the nested transaction (auto-renewable subscriptions only).
    public let expiresDate: AppleTimestamp?
    /// `data.status` of the notification (auto-renewable subscriptions only).
    public let status: SubscriptionStatus?
    /// Unsigned transaction payload JSON, to sign into `signedTransactionInfo`; nil when the
    /// notification carries no transaction.
    public let transactionPayload: [UInt8]?
    /// Unsigned renewal-info payload JSON, to sign into `signedRenewalInfo`; nil unless the
    /// transaction is an auto-renewable subscription.
    public let renewalPayload: [UInt8]?
    /// Unsigned app-transaction payload JSON, to sign into `appData.signedAppTransactionInfo`
    /// (`RESCIND_CONSENT` only).
    public let appTransactionPayload: [UInt8]?

    /// Which payload object the notification carries, with the values it needs.
    let body: Body

    enum Body: Sendable, Hashable {
        case data(bundleVersion: String, consumptionRequestReason: ConsumptionRequestReason?)
        case summary(requestIdentifier: String, productId: String, storefrontCountryCodes: [String], succeededCount: Int64, failedCount: Int64)
        case externalPurchaseToken(externalPurchaseId: String, tokenCreationDate: Int64, tokenType: ExternalPurchaseTokenType?, tokenExpirationDate: Int64?)
        case appData
    }

    /// The notification payload JSON (`responseBodyV2DecodedPayload`), with the given signed
    /// strings in `data.signedTransactionInfo`, `data.signedRenewalInfo` and
    /// `appData.signedAppTransactionInfo`. A nil argument leaves that field out.
    public func notificationJSON(signedTransactionInfo: String?, signedRenewalInfo: String?, signedAppTransactionInfo: String? = nil) -> [UInt8] {
        var w = JSONText(reserving: 512 + (signedTransactionInfo?.utf8.count ?? 0) + (signedRenewalInfo?.utf8.count ?? 0))
        w.beginObject()
        w.field("notificationType", combination.notificationType.rawValue)
        w.field("subtype", combination.subtype?.rawValue)
        w.field("notificationUUID", notificationUUID)
        switch body {
        case .data(let bundleVersion, let consumptionRequestReason):
            w.key("data")
            w.beginObject()
            w.field("appAppleId", appAppleId)
            w.field("bundleId", bundleId)
            w.field("bundleVersion", bundleVersion)
            w.field("environment", environment.rawValue)
            w.field("signedTransactionInfo", signedTransactionInfo)
            w.field("signedRenewalInfo", signedRenewalInfo)
            w.field("status", status?.rawValue)
            w.field("consumptionRequestReason", consumptionRequestReason?.rawValue)
            w.endObject()
        case .summary(let requestIdentifier, let productId, let storefrontCountryCodes, let succeededCount, let failedCount):
            w.key("summary")
            w.beginObject()
            w.field("requestIdentifier", requestIdentifier)
            w.field("environment", environment.rawValue)
            w.field("appAppleId", appAppleId)
            w.field("bundleId", bundleId)
            w.field("productId", productId)
            w.field("storefrontCountryCodes", storefrontCountryCodes)
            w.field("failedCount", failedCount)
            w.field("succeededCount", succeededCount)
            w.endObject()
        case .externalPurchaseToken(let externalPurchaseId, let tokenCreationDate, let tokenType, let tokenExpirationDate):
            w.key("externalPurchaseToken")
            w.beginObject()
            w.field("externalPurchaseId", externalPurchaseId)
            w.field("tokenCreationDate", tokenCreationDate)
            w.field("appAppleId", appAppleId)
            w.field("bundleId", bundleId)
            w.field("tokenType", tokenType?.rawValue)
            w.field("tokenExpirationDate", tokenExpirationDate)
            w.endObject()
        case .appData:
            w.key("appData")
            w.beginObject()
            w.field("appAppleId", appAppleId)
            w.field("bundleId", bundleId)
            w.field("environment", environment.rawValue)
            w.field("signedAppTransactionInfo", signedAppTransactionInfo)
            w.endObject()
        }
        w.field("version", "2.0")
        w.field("signedDate", signedDate)
        w.endObject()
        return w.bytes
    }
}

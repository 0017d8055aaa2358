package import AppStoreModels
import Foundation
package import SignetCore
package import SignetJWS

/// Builders for verified payloads without crypto (SignetJWS's package initialisers), shared by
/// the state tests and the PostgreSQL store's.
package enum Fixture {
    package static let t0: Int64 = 1_700_000_000_000
    package static let day: Int64 = 86_400_000
    package static let bundleId = "com.example.signet"

    package static func ts(_ milliseconds: Int64?) -> AppleTimestamp? {
        milliseconds.map(AppleTimestamp.init(millisecondsSince1970:))
    }

    package static func transaction(
        otid: String = "1000", id: String, product: String = "pro.monthly",
        type: TransactionType = .autoRenewableSubscription,
        purchase: Int64, expires: Int64? = nil, signed: Int64,
        ownership: InAppOwnershipType = .purchased, token: String? = "5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01",
        revoked: Int64? = nil, revocationType: RevocationType? = nil, environment: AppStoreEnvironment = .production,
        group: String? = nil
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: otid, transactionId: id, bundleId: bundleId, productId: product, subscriptionGroupIdentifier: group,
            purchaseDate: ts(purchase), originalPurchaseDate: ts(purchase),
            expiresDate: type == .autoRenewableSubscription || type == .nonRenewingSubscription ? ts(expires) : nil,
            quantity: 1, type: type, appAccountToken: token, inAppOwnershipType: ownership, signedDate: ts(signed),
            revocationReason: revoked == nil ? nil : .refundedForOtherReason, revocationDate: ts(revoked),
            environment: environment, revocationType: revocationType)
    }

    package static func renewal(
        otid: String = "1000", product: String = "pro.monthly", autoRenew: Bool = true, signed: Int64,
        billingRetry: Bool = false, graceEnds: Int64? = nil, expirationIntent: ExpirationIntent? = nil, renewalDate: Int64? = nil,
        recentStart: Int64? = nil
    ) -> JWSRenewalInfoDecodedPayload {
        var renewal = JWSRenewalInfoDecodedPayload(
            expirationIntent: expirationIntent, originalTransactionId: otid, autoRenewProductId: product,
            productId: product, autoRenewStatus: autoRenew ? .on : .off, isInBillingRetryPeriod: billingRetry,
            gracePeriodExpiresDate: ts(graceEnds), signedDate: ts(signed), environment: .production, renewalDate: ts(renewalDate))
        renewal.recentSubscriptionStartDate = ts(recentStart)
        return renewal
    }

    package static func notification(
        _ type: NotificationType, _ subtype: Subtype? = nil, uuid: String, signed: Int64,
        transaction: JWSTransactionDecodedPayload? = nil, renewal: JWSRenewalInfoDecodedPayload? = nil,
        summary: NotificationSummary? = nil, externalToken: ExternalPurchaseToken? = nil, status: SubscriptionStatus? = nil,
        reason: ConsumptionRequestReason? = nil
    ) -> VerifiedPayload {
        let body = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid, version: "2.0", signedDate: ts(signed),
            data: summary == nil && externalToken == nil
                ? NotificationData(bundleId: bundleId, environment: transaction?.environment ?? .production, signedTransactionInfo: transaction == nil ? nil : "jws",
                                   signedRenewalInfo: renewal == nil ? nil : "jws", status: status, consumptionRequestReason: reason)
                : nil,
            summary: summary, externalPurchaseToken: externalToken)
        return .notification(VerifiedNotification(
            payload: body, payloadJSON: [],
            transaction: transaction.map(verified), renewalInfo: renewal.map(verified),
            effectiveDate: Date(timeIntervalSince1970: Double(signed) / 1000), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3))
    }

    /// RESCIND_CONSENT as Apple sends it: `appData` with the app transaction of download `app`, no purchase.
    package static func rescindConsent(_ app: String?, uuid: String, signed: Int64) -> VerifiedPayload {
        let body = ResponseBodyV2DecodedPayload(
            notificationType: .rescindConsent, notificationUUID: uuid, version: "2.0", signedDate: ts(signed),
            appData: AppData(appAppleId: 1234, bundleId: bundleId, environment: .production, signedAppTransactionInfo: "jws"))
        let appTransaction = JWSAppTransactionDecodedPayload(
            receiptType: .production, appAppleId: 1234, bundleId: bundleId, appTransactionId: app, signedDate: ts(signed))
        return .notification(VerifiedNotification(
            payload: body, payloadJSON: [], transaction: nil, renewalInfo: nil,
            appTransaction: VerifiedAppTransaction(
                payload: appTransaction, payloadJSON: [], effectiveDate: Date(), signingCertificate: AppleRoots.appleRootCAG3),
            effectiveDate: Date(timeIntervalSince1970: Double(signed) / 1000), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3))
    }

    package static func verified(_ payload: JWSTransactionDecodedPayload) -> VerifiedTransaction {
        VerifiedTransaction(
            payload: payload, payloadJSON: [], effectiveDate: Date(), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3)
    }

    package static func verified(_ payload: JWSRenewalInfoDecodedPayload) -> VerifiedRenewalInfo {
        VerifiedRenewalInfo(
            payload: payload, payloadJSON: [], effectiveDate: Date(), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3)
    }

    /// A signed transaction forwarded by the app.
    package static func appTransaction(_ payload: JWSTransactionDecodedPayload) -> VerifiedPayload {
        .transaction(verified(payload))
    }

    /// Apple's current status of a purchase (Get All Subscription Statuses), as `signet reconcile` feeds it.
    package static func status(
        _ transaction: JWSTransactionDecodedPayload, _ renewal: JWSRenewalInfoDecodedPayload, status: Int? = nil
    ) -> VerifiedPayload {
        .status(VerifiedSubscriptionStatus(transaction: verified(transaction), renewalInfo: verified(renewal), status: status))
    }

    package static func record(_ payload: VerifiedPayload, line: Int64) -> Record {
        var record = Record(raw: Array("line \(line)".utf8), position: SourcePosition(stream: "test", offset: line))
        record[VerifiedPayloadPart.self] = payload
        return record
    }

    package static func temporaryDatabase() -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-state-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("state.db").path
    }
}

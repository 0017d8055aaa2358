public import AppStoreModels
public import SignetJWS

/// The verified facts one record contributes to the state machine, independent of how
/// they were verified (so the machine can be tested and embedded without crypto).
///
/// An immutable class: `dedupe` derives it once and `transition` reads it from the record,
/// so passing it on is one reference, not a copy of every field of the decoded payloads.
public final class TransitionInput: Sendable {
    /// Where the input came from (a notification, a status answer, reconcile), written on its events.
    public let source: EntitlementEvent.Source
    /// The notification's type; nil for an input that is not a notification.
    public let notificationType: NotificationType?
    /// The notification's subtype, when it has one.
    public let subtype: Subtype?
    /// The notification's id (a dedupe key and the events' cause).
    public let notificationUUID: String?
    /// The notification's signedDate; for a forwarded transaction or renewal info, its own.
    public let signedDate: AppleTimestamp?
    /// The environment the payload was signed for.
    public let environment: AppStoreEnvironment?
    /// The app's bundle id from the payload.
    public let bundleId: String?
    /// The verified transaction it carries, if any.
    public let transaction: JWSTransactionDecodedPayload?
    /// The verified renewal information it carries, if any.
    public let renewalInfo: JWSRenewalInfoDecodedPayload?
    /// The notification's `data.status`: the subscription's status when Apple signed it.
    public let status: SubscriptionStatus?
    /// The verified app transaction of an app-level notification (RESCIND_CONSENT's `appData`).
    public let appTransaction: JWSAppTransactionDecodedPayload?
    /// Why the customer asked for a refund (CONSUMPTION_REQUEST's `data.consumptionRequestReason`).
    public let consumptionRequestReason: ConsumptionRequestReason?

    /// An input from its parts (tests, fuzzing, and sources that are not notifications).
    public init(
        source: EntitlementEvent.Source,
        notificationType: NotificationType? = nil,
        subtype: Subtype? = nil,
        notificationUUID: String? = nil,
        signedDate: AppleTimestamp? = nil,
        environment: AppStoreEnvironment? = nil,
        bundleId: String? = nil,
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil,
        status: SubscriptionStatus? = nil,
        appTransaction: JWSAppTransactionDecodedPayload? = nil,
        consumptionRequestReason: ConsumptionRequestReason? = nil
    ) {
        self.source = source
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.signedDate = signedDate
        self.environment = environment
        self.bundleId = bundleId
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.status = status
        self.appTransaction = appTransaction
        self.consumptionRequestReason = consumptionRequestReason
    }

    /// The facts of a verified payload from the `verify` stage.
    public convenience init(_ payload: VerifiedPayload) {
        switch payload {
        case .notification(let notification):
            let body = notification.payload
            self.init(
                source: .notification,
                notificationType: body.notificationType,
                subtype: body.subtype,
                notificationUUID: body.notificationUUID,
                signedDate: body.signedDate ?? notification.transaction?.payload.signedDate,
                environment: body.data?.environment ?? body.summary?.environment ?? notification.transaction?.payload.environment,
                bundleId: body.data?.bundleId ?? body.summary?.bundleId ?? body.appData?.bundleId ?? body.externalPurchaseToken?.bundleId,
                transaction: notification.transaction?.payload,
                renewalInfo: notification.renewalInfo?.payload,
                status: body.data?.status,
                appTransaction: notification.appTransaction?.payload,
                consumptionRequestReason: body.data?.consumptionRequestReason)
        case .transaction(let transaction):
            self.init(
                source: .appTransaction,
                signedDate: transaction.payload.signedDate,
                environment: transaction.payload.environment,
                bundleId: transaction.payload.bundleId,
                transaction: transaction.payload)
        case .status(let status):
            let transaction = status.transaction.payload, renewalInfo = status.renewalInfo.payload
            // Apple signs both when it answers; the later of the two orders the status against notifications.
            let signed = [transaction.signedDate, renewalInfo.signedDate].compactMap { $0 }.max { $0.millisecondsSince1970 < $1.millisecondsSince1970 }
            self.init(
                source: .subscriptionStatus,
                signedDate: signed,
                environment: transaction.environment,
                bundleId: transaction.bundleId,
                transaction: transaction,
                renewalInfo: renewalInfo,
                status: status.status.map(SubscriptionStatus.init(rawValue:)))
        case .renewalInfo(let renewalInfo):
            self.init(
                source: .renewalInfo,
                signedDate: renewalInfo.payload.signedDate,
                environment: renewalInfo.payload.environment,
                renewalInfo: renewalInfo.payload)
        }
    }

    /// The download of the app this input is about (Apple's `appTransactionId`), from whichever
    /// signed part carries it.
    public var appTransactionId: String? {
        appTransaction?.appTransactionId ?? transaction?.appTransactionId ?? renewalInfo?.appTransactionId
    }

    /// The purchase this input is about.
    public var originalTransactionId: String? {
        transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId
    }

    /// The identity of the input that caused an event, for deterministic event ids:
    /// the notificationUUID, or the forwarded payload's own identity.
    var sourceIdentity: String {
        if let notificationUUID { return "n:\(notificationUUID)" }
        let signed = signedDate.map { String($0.millisecondsSince1970) } ?? "-"
        if source == .subscriptionStatus { return "s:\(transaction?.transactionId ?? "-"):\(signed)" }
        if let transactionId = transaction?.transactionId { return "t:\(transactionId):\(signed)" }
        return "r:\(originalTransactionId ?? "-"):\(signed)"
    }
}

public import AppStoreModels
public import Foundation
public import SignetOpenSSL

/// An App Store Server Notification V2 (`signedPayload`) that verified, together with
/// its nested transaction and renewal info, each verified on its own.
///
/// A class, immutable: a record's parts and every stage after `verify` pass it around,
/// and a copy is then one reference rather than every field of three decoded payloads.
public final class VerifiedNotification: Sendable {
    /// The decoded notification.
    public let payload: ResponseBodyV2DecodedPayload
    /// The exact payload bytes the signature covers.
    public let payloadJSON: [UInt8]
    /// What happened (`payload.notificationType`); nil for a type this library does not know yet.
    public var notificationType: NotificationType? { payload.notificationType }
    /// The detail of ``notificationType`` (`payload.subtype`), when Apple gives one.
    public var subtype: Subtype? { payload.subtype }
    /// Apple's id of the notification, the same on every retry of it (`payload.notificationUUID`).
    public var notificationUUID: String? { payload.notificationUUID }
    /// `data.signedTransactionInfo`, verified (nil when the notification has none).
    public let transaction: VerifiedTransaction?
    /// `data.signedRenewalInfo`, verified (nil when the notification has none).
    public let renewalInfo: VerifiedRenewalInfo?
    /// `appData.signedAppTransactionInfo`, verified (app-level notifications such as RESCIND_CONSENT).
    public let appTransaction: VerifiedAppTransaction?
    /// The instant the notification's certificate chain was validated at.
    public let effectiveDate: Date
    /// Where ``effectiveDate`` came from (see ``VerificationDateRule/signedDate``).
    public let effectiveDateSource: VerificationDateSource
    /// The leaf certificate (`x5c[0]`) that signed the notification.
    public let signingCertificate: X509Certificate
    /// The chain that verified, leaf → intermediate → the configured root it led to (empty
    /// for a payload built without verification): what an online revocation check asks about.
    public let certificateChain: [X509Certificate]

    // Not public: only the verifier makes one. Package: the test fixtures build one unsigned.
    package init(
        payload: ResponseBodyV2DecodedPayload,
        payloadJSON: [UInt8],
        transaction: VerifiedTransaction?,
        renewalInfo: VerifiedRenewalInfo?,
        appTransaction: VerifiedAppTransaction? = nil,
        effectiveDate: Date,
        effectiveDateSource: VerificationDateSource,
        signingCertificate: X509Certificate,
        certificateChain: [X509Certificate] = []
    ) {
        self.payload = payload
        self.payloadJSON = payloadJSON
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.effectiveDate = effectiveDate
        self.effectiveDateSource = effectiveDateSource
        self.signingCertificate = signingCertificate
        self.certificateChain = certificateChain
    }
}

/// Which instant a chain was validated at, and why.
public enum VerificationDateSource: String, Sendable, Hashable {
    /// The payload's own `signedDate`.
    case signedDate
    /// A notification without `signedDate`: its nested transaction's `signedDate`.
    case nestedTransactionSignedDate
    /// A notification without `signedDate` or nested transaction: its nested renewal info's `signedDate`.
    case nestedRenewalInfoSignedDate
    /// The current time: no date in the payload, or ``VerificationDateRule/currentTime``.
    case currentTime
}

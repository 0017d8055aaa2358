import AppStoreModels
public import SignetCore

/// What the `decode` stage found in an input line: which kind of signed object it
/// carries and its compact JWS text. Nothing in it is trusted yet.
public struct SignedEnvelope: Sendable, Equatable {
    /// Which of Apple's signed objects a line carries.
    public enum Kind: String, Sendable, Equatable {
        /// An App Store Server Notification (`signedPayload`, or a bare JWS line).
        case notification
        /// A signed transaction an app forwarded after a purchase (`signedTransaction` / `signedTransactionInfo`).
        case transaction
        /// A signed renewal info (`signedRenewalInfo`).
        case renewalInfo
        /// Apple's current status of a purchase, as Get All Subscription Statuses lists it: a
        /// `signedTransactionInfo` with its `signedRenewalInfo` (and `status`) in one object.
        case status
    }

    /// Which signed object the line carries.
    public var kind: Kind
    /// The compact JWS (`header.payload.signature`); for ``Kind/status``, the transaction's.
    public var jws: String
    /// For ``Kind/status``: the renewal info's compact JWS.
    public var renewalJWS: String?
    /// For ``Kind/status``: Apple's `status` number as the line gives it (1 active ... 5 revoked);
    /// unsigned, so only carried along, never used to decide anything.
    public var status: Int?

    /// An envelope of `kind` around `jws` (and, for a status, the renewal info's JWS and Apple's number).
    public init(kind: Kind, jws: String, renewalJWS: String? = nil, status: Int? = nil) {
        self.kind = kind
        self.jws = jws
        self.renewalJWS = renewalJWS
        self.status = status
    }
}

/// A payload whose signature, chain and claims the `verify` stage checked.
public enum VerifiedPayload: Sendable {
    /// An App Store Server Notification, with its nested payloads verified.
    case notification(VerifiedNotification)
    /// A signed transaction an app forwarded.
    case transaction(VerifiedTransaction)
    /// A signed renewal info on its own.
    case renewalInfo(VerifiedRenewalInfo)
    /// A purchase's status from Get All Subscription Statuses: its transaction and renewal info.
    case status(VerifiedSubscriptionStatus)

    /// The transaction the payload carries (a notification's nested one, or itself).
    public var transaction: VerifiedTransaction? {
        switch self {
        case .notification(let notification): notification.transaction
        case .transaction(let transaction): transaction
        case .renewalInfo: nil
        case .status(let status): status.transaction
        }
    }

    /// The renewal info the payload carries, if any.
    public var renewalInfo: VerifiedRenewalInfo? {
        switch self {
        case .notification(let notification): notification.renewalInfo
        case .transaction: nil
        case .renewalInfo(let renewalInfo): renewalInfo
        case .status(let status): status.renewalInfo
        }
    }
}

/// Record slot filled by the `decode` stage.
public enum SignedEnvelopePart: RecordPartKey {
    /// What the line carries.
    public typealias Value = SignedEnvelope
}

/// Record slot a source fills when it takes one kind of signed object only (the webhook's
/// purchase path: a transaction); `decode` rejects a line carrying another kind
/// (`missing_signed_payload`), so it is never verified and applied as what it is.
package enum RequiredEnvelopeKindPart: RecordPartKey {
    package typealias Value = SignedEnvelope.Kind
}

/// Record slot filled by the `verify` stage; later stages read only verified data from here.
public enum VerifiedPayloadPart: RecordPartKey {
    /// The verified payload.
    public typealias Value = VerifiedPayload
}

/// The name of ``VerifiedPayloadPart`` before record parts were named alike.
@available(*, deprecated, renamed: "VerifiedPayloadPart")
public typealias VerifiedPayloadKey = VerifiedPayloadPart

/// The name of ``SignedEnvelopePart`` before record parts were named alike.
@available(*, deprecated, renamed: "SignedEnvelopePart")
public typealias SignedEnvelopeKey = SignedEnvelopePart

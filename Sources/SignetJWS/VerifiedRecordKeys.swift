import AppStoreModels
import SignetCore

/// What the `decode` stage found in an input line: which kind of signed object it
/// carries and its compact JWS text. Nothing in it is trusted yet.
public struct SignedEnvelope: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// An App Store Server Notification (`signedPayload`, or a bare JWS line).
        case notification
        /// A signed transaction an app forwarded after a purchase (`signedTransaction` / `signedTransactionInfo`).
        case transaction
        /// A signed renewal info (`signedRenewalInfo`).
        case renewalInfo
    }

    public var kind: Kind
    /// The compact JWS (`header.payload.signature`).
    public var jws: String

    public init(kind: Kind, jws: String) {
        self.kind = kind
        self.jws = jws
    }
}

/// A payload whose signature, chain and claims the `verify` stage checked.
public enum VerifiedPayload: Sendable {
    case notification(VerifiedNotification)
    case transaction(VerifiedTransaction)
    case renewalInfo(VerifiedRenewalInfo)

    /// The transaction the payload carries (a notification's nested one, or itself).
    public var transaction: VerifiedTransaction? {
        switch self {
        case .notification(let notification): notification.transaction
        case .transaction(let transaction): transaction
        case .renewalInfo: nil
        }
    }

    /// The renewal info the payload carries, if any.
    public var renewalInfo: VerifiedRenewalInfo? {
        switch self {
        case .notification(let notification): notification.renewalInfo
        case .transaction: nil
        case .renewalInfo(let renewalInfo): renewalInfo
        }
    }
}

/// Record slot filled by the `decode` stage.
public enum SignedEnvelopeKey: RecordPartKey {
    public typealias Value = SignedEnvelope
}

/// Record slot filled by the `verify` stage; later stages read only verified data from here.
public enum VerifiedPayloadKey: RecordPartKey {
    public typealias Value = VerifiedPayload
}

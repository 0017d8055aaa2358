/// What a verified OCSP response says about one certificate.
public struct OCSPSingleResponse: Sendable, Hashable {
    /// The certificate's status (RFC 6960 `CertStatus`).
    public enum Status: Sendable, Hashable {
        case good
        /// Revoked at `revokedAtEpochSeconds`; `reason` is nil when the response gives none.
        case revoked(reason: RevocationReason?, revokedAtEpochSeconds: Int64)
        /// The responder does not know the certificate (not issued by the CA it serves, or
        /// not yet in its database).
        case unknown
    }

    /// An X.509 `CRLReason` (RFC 5280 §5.3.1).
    public struct RevocationReason: Sendable, Hashable, CustomStringConvertible {
        /// The ASN.1 ENUMERATED value.
        public let code: Int

        public init(code: Int) { self.code = code }

        public var description: String {
            switch code {
            case 0: "unspecified"
            case 1: "keyCompromise"
            case 2: "cACompromise"
            case 3: "affiliationChanged"
            case 4: "superseded"
            case 5: "cessationOfOperation"
            case 6: "certificateHold"
            case 8: "removeFromCRL"
            case 9: "privilegeWithdrawn"
            case 10: "aACompromise"
            default: "reason \(code)"
            }
        }
    }

    public var status: Status
    /// When the responder last knew the status to be correct, seconds since 1970.
    public var thisUpdateEpochSeconds: Int64
    /// When newer information will be available, seconds since 1970; nil when the
    /// responder promises none (newer information is always available).
    public var nextUpdateEpochSeconds: Int64?

    public init(status: Status, thisUpdateEpochSeconds: Int64, nextUpdateEpochSeconds: Int64?) {
        self.status = status
        self.thisUpdateEpochSeconds = thisUpdateEpochSeconds
        self.nextUpdateEpochSeconds = nextUpdateEpochSeconds
    }
}

public import SignetCore

/// One step of JWS verification, in the order ``AppStoreVerifier`` runs them.
///
/// `allCases` *is* the order: the first failing step decides the reason code, so an
/// input that fails several checks is reported by the earliest. docs/verification.md
/// states the same table, and a test holds the two together.
///
/// Why this order: cheap structural checks first; the signature before the payload is
/// parsed (unauthenticated JSON never reaches the decoder); the validation instant is
/// read from the now-authenticated payload before the chain, because the chain is judged
/// at that instant (as Apple's library does); claims only once the chain is trusted.
public enum VerificationStep: String, CaseIterable, Sendable {
    /// Size, three strict base64url segments, header rules and `x5c` (`CompactJWSPolicy`).
    case compactJWS = "compact_jws"
    /// ES256 over `header.payload` with `x5c[0]`'s P-256 key (`SignaturePolicy`).
    case signature
    /// The signed payload decodes to Apple's model (`PayloadPolicy`).
    case payload
    /// `signedDate` not in the future; the instant the chain is judged at (`ValidationInstantPolicy`).
    case validationInstant = "validation_instant"
    /// OpenSSL path to a configured root at the instant, Apple's OIDs (`AppleChainPolicy`).
    case appleChain = "apple_chain"
    /// Configured bundle id, app Apple id and environment (`ClaimsPolicy`).
    case claims
    /// A notification's nested transaction and renewal info pass every step on their own.
    case nested

    /// The reason codes this step can produce, in the order it checks them.
    public var reasons: [ReasonCode] {
        switch self {
        case .compactJWS: [.malformedJWS, .unsupportedAlgorithm, .unsupportedHeader, .invalidX5C]
        // A leaf whose key is not P-256 cannot have made the signature: reported as a chain problem.
        case .signature: [.invalidSignature, .invalidCertificateChain]
        case .payload: [.malformedJWS, .malformedPayload]
        case .validationInstant: [.signedDateInFuture]
        case .appleChain: [.certificateNotValidAtSignedDate, .invalidCertificateChain, .missingAppleOID]
        case .claims: [.bundleIdMismatch, .appAppleIdMismatch, .environmentMismatch]
        case .nested: [.nestedJWSInvalid]
        }
    }
}

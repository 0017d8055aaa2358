public import SignetCore

/// The codes the `decode` and `verify` stages reject with (docs/reason-codes.md).
extension ReasonCode {
    // MARK: Input framing (`decode`)
    /// The line is not valid UTF-8.
    public static let invalidUTF8: ReasonCode = "invalid_utf8"
    /// The line is not a JSON object (and not a bare compact JWS).
    public static let malformedJSON: ReasonCode = "malformed_json"
    /// A JSON object without `signedPayload`, `signedTransaction`, `signedTransactionInfo` or `signedRenewalInfo`.
    public static let missingSignedPayload: ReasonCode = "missing_signed_payload"

    // MARK: JWS structure (`verify`)
    /// Not three base64url segments, or a header/payload that is not a JSON object.
    public static let malformedJWS: ReasonCode = "malformed_jws"
    /// `alg` is anything but `ES256`.
    public static let unsupportedAlgorithm: ReasonCode = "unsupported_algorithm"
    /// The header carries `crit`, or another header field Signet refuses.
    public static let unsupportedHeader: ReasonCode = "unsupported_header"
    /// No `x5c`, or `x5c` does not hold exactly three base64 DER certificates.
    public static let invalidX5C: ReasonCode = "invalid_x5c"
    /// The chain does not lead to a configured root, or a certificate is malformed or not a CA where it must be.
    public static let invalidCertificateChain: ReasonCode = "invalid_certificate_chain"
    /// The leaf lacks 1.2.840.113635.100.6.11.1 or the intermediate lacks 1.2.840.113635.100.6.2.1.
    public static let missingAppleOID: ReasonCode = "missing_apple_oid"
    /// A certificate of the chain was not valid at the payload's signedDate.
    public static let certificateNotValidAtSignedDate: ReasonCode = "certificate_not_valid_at_signed_date"
    /// `signedDate` lies further in the future than the allowed clock skew.
    public static let signedDateInFuture: ReasonCode = "signed_date_in_future"
    /// The ES256 signature does not verify with the leaf's key (or is not 64 bytes).
    public static let invalidSignature: ReasonCode = "invalid_signature"
    /// The payload JSON does not decode to the expected model.
    public static let malformedPayload: ReasonCode = "malformed_payload"

    // MARK: Claims (`verify`)
    /// The payload's environment is not one the pipeline accepts (or is missing).
    public static let environmentMismatch: ReasonCode = "environment_mismatch"
    /// The payload's bundleId is not the configured one (or is missing).
    public static let bundleIdMismatch: ReasonCode = "bundle_id_mismatch"
    /// A Production payload's appAppleId is not the configured one (or is missing).
    public static let appAppleIdMismatch: ReasonCode = "app_apple_id_mismatch"
    /// The reasons that say the deployment, not the input, is wrong: Apple signed the payload,
    /// but for another app or environment than configured.
    public static let configurationMismatches: Set<ReasonCode> = [.environmentMismatch, .bundleIdMismatch, .appAppleIdMismatch]
    /// A nested `signedTransactionInfo` / `signedRenewalInfo` failed verification.
    public static let nestedJWSInvalid: ReasonCode = "nested_jws_invalid"

    // MARK: Online revocation (`verify` with `revocation.mode` soft or hard)
    /// The issuer (its OCSP responder, or its CRL when OCSP gives no answer) says a certificate of the chain was revoked.
    public static let certificateRevoked: ReasonCode = "certificate_revoked"
    /// `signet verify --revocation hard` only: no issuer answered (the stage holds such a record instead).
    public static let revocationUnavailable: ReasonCode = "revocation_unavailable"
}

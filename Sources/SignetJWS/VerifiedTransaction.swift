public import AppStoreModels
public import Foundation
public import SignetOpenSSL

/// A `signedTransactionInfo` whose signature, certificate chain and claims verified.
public final class VerifiedTransaction: Sendable {
    /// The decoded payload.
    public let payload: JWSTransactionDecodedPayload
    /// The exact payload bytes the signature covers (base64url-decoded), for storage or re-decoding.
    public let payloadJSON: [UInt8]
    /// The instant the certificate chain was validated at.
    public let effectiveDate: Date
    /// Where ``effectiveDate`` came from.
    public let effectiveDateSource: VerificationDateSource
    /// The leaf certificate (`x5c[0]`) that signed it.
    public let signingCertificate: X509Certificate
    /// The chain that verified, leaf → intermediate → the configured root it led to (empty
    /// for a payload built without verification): what an online revocation check asks about.
    public let certificateChain: [X509Certificate]

    // Not public: only the verifier makes one. Package: the test fixtures build one unsigned.
    package init(
        payload: JWSTransactionDecodedPayload,
        payloadJSON: [UInt8],
        effectiveDate: Date,
        effectiveDateSource: VerificationDateSource,
        signingCertificate: X509Certificate,
        certificateChain: [X509Certificate] = []
    ) {
        self.payload = payload
        self.payloadJSON = payloadJSON
        self.effectiveDate = effectiveDate
        self.effectiveDateSource = effectiveDateSource
        self.signingCertificate = signingCertificate
        self.certificateChain = certificateChain
    }
}

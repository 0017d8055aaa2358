public import AppStoreModels
public import Foundation
public import SignetOpenSSL

/// An `appData.signedAppTransactionInfo` whose signature, certificate chain and claims verified.
public final class VerifiedAppTransaction: Sendable {
    /// The decoded payload.
    public let payload: JWSAppTransactionDecodedPayload
    /// The exact payload bytes the signature covers.
    public let payloadJSON: [UInt8]
    /// The instant the certificate chain was validated at.
    public let effectiveDate: Date
    /// The leaf certificate (`x5c[0]`) that signed it.
    public let signingCertificate: X509Certificate
    /// The chain that verified, leaf → intermediate → the configured root it led to (empty
    /// for a payload built without verification): what an online revocation check asks about.
    public let certificateChain: [X509Certificate]

    // Not public: only the verifier makes one. Package: the test fixtures build one unsigned.
    package init(payload: JWSAppTransactionDecodedPayload, payloadJSON: [UInt8], effectiveDate: Date, signingCertificate: X509Certificate,
        certificateChain: [X509Certificate] = []
    ) {
        self.payload = payload
        self.payloadJSON = payloadJSON
        self.effectiveDate = effectiveDate
        self.signingCertificate = signingCertificate
        self.certificateChain = certificateChain
    }
}

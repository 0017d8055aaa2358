public import AppStoreModels
public import Foundation
public import SignetOpenSSL

/// A real-time retention request (`RealtimeRequestBody.signedPayload`) whose signature,
/// certificate chain and claims verified, with every field Apple documents present: only such a
/// request may be answered (docs/retention.md).
public final class VerifiedRealtimeRequest: Sendable {
    /// The decoded payload; every field is present.
    public let payload: DecodedRealtimeRequestBody
    /// The exact payload bytes the signature covers.
    public let payloadJSON: [UInt8]
    /// The instant the certificate chain was validated at (the request's `signedDate`).
    public let effectiveDate: Date
    /// The leaf certificate (`x5c[0]`) that signed it.
    public let signingCertificate: X509Certificate
    /// The chain that verified, leaf → intermediate → the configured root it led to.
    public let certificateChain: [X509Certificate]

    /// The customer's subscription (its original transaction id).
    public var originalTransactionId: String { payload.originalTransactionId ?? "" }
    /// Apple's identifier of this request, lower case (Apple's case varies; compare these).
    public var requestIdentifier: String { (payload.requestIdentifier ?? "").lowercased() }

    // Not public: only the verifier makes one.
    package init(
        payload: DecodedRealtimeRequestBody, payloadJSON: [UInt8], effectiveDate: Date, signingCertificate: X509Certificate,
        certificateChain: [X509Certificate]
    ) {
        self.payload = payload
        self.payloadJSON = payloadJSON
        self.effectiveDate = effectiveDate
        self.signingCertificate = signingCertificate
        self.certificateChain = certificateChain
    }
}

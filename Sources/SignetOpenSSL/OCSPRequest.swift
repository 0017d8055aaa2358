import COpenSSL

/// A DER OCSP request (RFC 6960) asking about one certificate, for an HTTP POST as
/// `application/ocsp-request`.
///
/// The certificate is named by a SHA-1 `CertID` (hashes of the issuer's name and key, and
/// the serial), the form every responder, Apple's included, answers; the same ID is built
/// again when the response is read (``OCSPResponse/singleResponse(for:issuer:request:atEpochSeconds:leewaySeconds:)``).
public struct OCSPRequest: Sendable, Hashable {
    /// The encoded `OCSPRequest`.
    public let derEncoded: [UInt8]
    /// Whether a random nonce extension is inside (the response must then echo it, or carry none).
    public let hasNonce: Bool

    /// Builds the request for `certificate`, issued by `issuer`.
    ///
    /// - Parameters:
    ///   - certificate: the certificate asked about.
    ///   - issuer: the certificate that issued it (its name and key identify `certificate`).
    ///   - nonce: add a random 16-byte nonce. Off by default: responders that
    ///     serve pre-signed answers (Apple's, most CDNs) ignore it, and a nonce makes each
    ///     request unique, defeating their caches.
    public init(certificate: X509Certificate, issuer: X509Certificate, nonce: Bool = false) throws(OCSPError) {
        guard let request = OCSP_REQUEST_new() else { throw .request(OpenSSLError.drain("create OCSP_REQUEST").description) }
        defer { OCSP_REQUEST_free(request) }
        let id = try OCSPRequest.certificateID(certificate, issuer)
        // add0 takes ownership of the ID only when it succeeds.
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw .request(OpenSSLError.drain("add certificate ID").description)
        }
        // val nil, len <= 0: OpenSSL draws a random nonce of its default length (16 bytes).
        if nonce, OCSP_request_add1_nonce(request, nil, -1) != 1 {
            throw .request(OpenSSLError.drain("add nonce").description)
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_OCSP_REQUEST(request, &out)
        guard length > 0, let out else { throw .request(OpenSSLError.drain("encode OCSP request").description) }
        derEncoded = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        CRYPTO_free(out, #fileID, #line)
        hasNonce = nonce
    }

    /// The SHA-1 `CertID` of `certificate` under `issuer` (owned by the caller).
    static func certificateID(_ certificate: X509Certificate, _ issuer: X509Certificate) throws(OCSPError) -> OpaquePointer {
        // dgst nil: SHA-1, what RFC 5019 (the lightweight profile large responders follow) requires.
        let id = withExtendedLifetime((certificate, issuer)) { OCSP_cert_to_id(nil, certificate.pointer, issuer.pointer) }
        guard let id else { throw .request(OpenSSLError.drain("build certificate ID").description) }
        return id
    }

    /// Runs `body` with the request parsed back into an `OCSP_REQUEST` (for the nonce check).
    func withParsed<R>(_ body: (OpaquePointer) -> R) throws(OCSPError) -> R {
        let (parsed, _) = OpenSSLSupport.decodeDER(derEncoded) { d2i_OCSP_REQUEST(nil, $0, $1) }
        guard let parsed else { throw .request(OpenSSLError.drain("parse own OCSP request").description) }
        defer { OCSP_REQUEST_free(parsed) }
        return body(parsed)
    }
}

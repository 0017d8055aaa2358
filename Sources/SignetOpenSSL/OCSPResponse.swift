import COpenSSL

/// A DER OCSP response as a responder sent it, read and checked only by
/// ``singleResponse(for:issuer:request:atEpochSeconds:leewaySeconds:)``.
///
/// Every byte of it comes from the network (plain HTTP, anyone on the path can change
/// it): parsing is OpenSSL's `d2i`, which fails cleanly on truncated or garbage input, and
/// nothing is believed before the signature verified.
public struct OCSPResponse: Sendable, Hashable {
    public let derEncoded: [UInt8]

    public init(derEncoded: [UInt8]) {
        self.derEncoded = derEncoded
    }

    /// Reads and checks the response and returns its status for `certificate`.
    ///
    /// In order: one whole DER `OCSPResponse`; `responseStatus` successful; a basic
    /// response; the nonce, when `request` carried one (a response without one is accepted:
    /// pre-signing responders ignore nonces); the signature, by `issuer` itself or by a
    /// responder certificate `issuer` signed with the OCSP-signing extended key usage, the
    /// responder's certificate valid at `atEpochSeconds` (`OCSP_basic_verify` with `issuer`
    /// as the only trust anchor: the chain above it was verified offline already); a
    /// `SingleResponse` for this certificate's ID; thisUpdate not after now + leeway and
    /// nextUpdate (when present) not before now - leeway.
    ///
    /// The freshness check is done here, not by `OCSP_check_validity`, which reads the wall
    /// clock: the caller's clock decides, and stale and not-yet-valid come apart.
    public func singleResponse(
        for certificate: X509Certificate, issuer: X509Certificate, request: OCSPRequest? = nil,
        atEpochSeconds now: Int64, leewaySeconds: Int64 = 300
    ) throws(OCSPError) -> OCSPSingleResponse {
        let response: OpaquePointer
        switch OpenSSLSupport.decodeWholeDER(derEncoded, { d2i_OCSP_RESPONSE(nil, $0, $1) }, free: OCSP_RESPONSE_free) {
        case .success(let decoded): response = decoded
        case .failure(let problem): throw .malformed(problem.detail)
        }
        defer { OCSP_RESPONSE_free(response) }

        let code = OCSP_response_status(response)
        guard code == OCSP_RESPONSE_STATUS_SUCCESSFUL else { throw .responderStatus(OCSPResponderStatus(code: code)) }
        guard let basic = OCSP_response_get1_basic(response) else {
            throw .malformed(OpenSSLError.drain("no basic response").description)
        }
        defer { OCSP_BASICRESP_free(basic) }

        if let request, request.hasNonce {
            // 1: equal, 2: neither has one, 3: only the response, -1: only the request
            // (the responder ignored it), 0: both, different.
            let nonce = try request.withParsed { OCSP_check_nonce($0, basic) }
            OpenSSLError.drainErrorQueue()
            guard nonce != 0 else { throw .nonceMismatch }
        }

        try Self.verifySignature(basic, issuer: issuer, atEpochSeconds: now)

        let id = try OCSPRequest.certificateID(certificate, issuer)
        defer { OCSP_CERTID_free(id) }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            OpenSSLError.drainErrorQueue()
            throw .certificateNotInResponse
        }
        // The times point into `basic`, read before it is freed.
        guard let thisUpdateSeconds = OpenSSLSupport.epochSeconds(thisUpdate) else { throw .malformed("thisUpdate") }
        let nextUpdateSeconds: Int64?
        if let nextUpdate {
            guard let seconds = OpenSSLSupport.epochSeconds(nextUpdate) else { throw .malformed("nextUpdate") }
            nextUpdateSeconds = seconds
        } else {
            nextUpdateSeconds = nil
        }
        let single: OCSPSingleResponse.Status
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: single = .good
        case V_OCSP_CERTSTATUS_UNKNOWN: single = .unknown
        case V_OCSP_CERTSTATUS_REVOKED:
            guard let revokedSeconds = OpenSSLSupport.epochSeconds(revokedAt) else { throw .malformed("revocationTime") }
            single = .revoked(
                reason: reason == OCSP_REVOKED_STATUS_NOSTATUS ? nil : .init(code: Int(reason)), revokedAtEpochSeconds: revokedSeconds)
        default: throw .malformed("certificate status \(status)")
        }

        switch OpenSSLSupport.validityProblem(thisUpdate: thisUpdateSeconds, nextUpdate: nextUpdateSeconds, now: now, leeway: leewaySeconds) {
        case .notYetValid: throw .notYetValid(thisUpdate: thisUpdateSeconds)
        case .stale: throw .stale(nextUpdate: nextUpdateSeconds ?? 0)
        case nil: break
        }
        return OCSPSingleResponse(status: single, thisUpdateEpochSeconds: thisUpdateSeconds, nextUpdateEpochSeconds: nextUpdateSeconds)
    }

    /// `OCSP_basic_verify` with `issuer` as the one trust anchor (partial chain), at `now`.
    private static func verifySignature(_ basic: OpaquePointer, issuer: X509Certificate, atEpochSeconds now: Int64) throws(OCSPError) {
        guard let store = X509_STORE_new() else { throw .badSignature(OpenSSLError.drain("create X509_STORE").description) }
        defer { X509_STORE_free(store) }
        guard let certificates = OPENSSL_sk_new_null() else { throw .badSignature(OpenSSLError.drain("create stack").description) }
        defer { OPENSSL_sk_free(certificates) }  // the stack only; the issuer stays owned by its object
        return try withExtendedLifetime(issuer) { () throws(OCSPError) in
            guard X509_STORE_add_cert(store, issuer.pointer) == 1,
                  OPENSSL_sk_push(certificates, UnsafeRawPointer(issuer.pointer)) > 0,
                  let parameters = X509_STORE_get0_param(store)
            else { throw .badSignature(OpenSSLError.drain("set up trust").description) }
            // The issuer is trusted as an anchor although it is not self-signed: it was
            // checked up to the root offline. set_time also turns on X509_V_FLAG_USE_CHECK_TIME.
            X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_PARTIAL_CHAIN))
            X509_VERIFY_PARAM_set_time(parameters, time_t(clamping: now))
            // `certificates` (the issuer) lets a response that carries no certificate be found
            // signed by the issuer; OCSP_NOEXPLICIT: only the issuer or its delegate may sign,
            // never a certificate that is merely trusted for OCSP signing.
            guard OCSP_basic_verify(basic, certificates, store, UInt(OCSP_NOEXPLICIT)) > 0 else {
                throw .badSignature(OpenSSLError.drain("verify").description)
            }
            OpenSSLError.drainErrorQueue()
        }
    }
}

import COpenSSL

/// A DER X.509 certificate revocation list (RFC 5280 §5) as a distribution point served it,
/// read and checked only by ``status(of:issuer:atEpochSeconds:leewaySeconds:)``.
///
/// Like an OCSP response it comes over plain HTTP (crl.apple.com): parsing is OpenSSL's
/// `d2i`, and nothing in it is believed before the issuer's signature verified.
package struct CertificateRevocationList: Sendable, Hashable {
    /// What a verified list says about one certificate.
    package struct Status: Sendable, Hashable {
        /// Listed: revoked at `revokedAtEpochSeconds`, `reason` nil when the entry gives none.
        package struct Revocation: Sendable, Hashable {
            package var reason: OCSPSingleResponse.RevocationReason?
            package var revokedAtEpochSeconds: Int64

            package init(reason: OCSPSingleResponse.RevocationReason?, revokedAtEpochSeconds: Int64) {
                self.reason = reason
                self.revokedAtEpochSeconds = revokedAtEpochSeconds
            }
        }

        /// nil: the certificate is not on the list (not revoked as of thisUpdate).
        package var revocation: Revocation?
        /// When the list was issued, seconds since 1970.
        package var thisUpdateEpochSeconds: Int64
        /// When the next list is due, seconds since 1970; nil when the list names no date.
        package var nextUpdateEpochSeconds: Int64?

        package init(revocation: Revocation?, thisUpdateEpochSeconds: Int64, nextUpdateEpochSeconds: Int64?) {
            self.revocation = revocation
            self.thisUpdateEpochSeconds = thisUpdateEpochSeconds
            self.nextUpdateEpochSeconds = nextUpdateEpochSeconds
        }
    }

    package let derEncoded: [UInt8]

    package init(derEncoded: [UInt8]) {
        self.derEncoded = derEncoded
    }

    /// Reads and checks the list and returns what it says about `certificate`.
    ///
    /// In order: one whole DER `CertificateList`; its issuer name is `issuer`'s subject; its
    /// signature verifies with `issuer`'s key; it is a complete list (no delta CRL indicator;
    /// an issuingDistributionPoint, when present, neither indirect nor limited to some reasons,
    /// nor to a kind of certificate `certificate` is not); no other critical extension;
    /// thisUpdate not after now + leeway and nextUpdate (when present) not before
    /// now - leeway; then the certificate's serial number is looked up.
    package func status(
        of certificate: X509Certificate, issuer: X509Certificate, atEpochSeconds now: Int64, leewaySeconds: Int64 = 300
    ) throws(CRLError) -> Status {
        let crl: OpaquePointer
        switch OpenSSLSupport.decodeWholeDER(derEncoded, { d2i_X509_CRL(nil, $0, $1) }, free: X509_CRL_free) {
        case .success(let decoded): crl = decoded
        case .failure(let problem): throw .malformed(problem.detail)
        }
        defer { X509_CRL_free(crl) }

        return try withExtendedLifetime((certificate, issuer)) { () throws(CRLError) -> Status in
            guard X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(issuer.pointer)) == 0 else {
                throw .wrongIssuer("\(X509Certificate.nameString(X509_CRL_get_issuer(crl))), not \(issuer.subject)")
            }
            guard let key = X509_get0_pubkey(issuer.pointer), X509_CRL_verify(crl, key) == 1 else {
                throw .badSignature(OpenSSLError.drain("verify").description)
            }
            try Self.checkCompleteness(crl, covering: certificate)

            guard let thisUpdate = OpenSSLSupport.epochSeconds(X509_CRL_get0_lastUpdate(crl)) else { throw .malformed("thisUpdate") }
            var nextUpdate: Int64?
            if let time = X509_CRL_get0_nextUpdate(crl) {
                guard let seconds = OpenSSLSupport.epochSeconds(time) else { throw .malformed("nextUpdate") }
                nextUpdate = seconds
            }
            switch OpenSSLSupport.validityProblem(thisUpdate: thisUpdate, nextUpdate: nextUpdate, now: now, leeway: leewaySeconds) {
            case .notYetValid: throw .notYetValid(thisUpdate: thisUpdate)
            case .stale: throw .stale(nextUpdate: nextUpdate ?? 0)
            case nil: break
            }

            var entry: OpaquePointer?
            // 0: not listed; 1: listed; 2: listed as removeFromCRL (only in delta lists, refused above).
            let found = X509_CRL_get0_by_serial(crl, &entry, X509_get0_serialNumber(certificate.pointer))
            OpenSSLError.drainErrorQueue()
            guard found == 1, let entry else {
                return Status(revocation: nil, thisUpdateEpochSeconds: thisUpdate, nextUpdateEpochSeconds: nextUpdate)
            }
            guard let revokedAt = OpenSSLSupport.epochSeconds(X509_REVOKED_get0_revocationDate(entry)) else {
                throw .malformed("revocationDate")
            }
            return Status(
                revocation: .init(reason: try Self.reason(of: entry), revokedAtEpochSeconds: revokedAt),
                thisUpdateEpochSeconds: thisUpdate, nextUpdateEpochSeconds: nextUpdate)
        }
    }

    /// The entry's reasonCode extension; nil when it has none.
    private static func reason(of entry: OpaquePointer) throws(CRLError) -> OCSPSingleResponse.RevocationReason? {
        var critical: Int32 = 0
        guard let raw = X509_REVOKED_get_ext_d2i(entry, NID_crl_reason, &critical, nil) else {
            OpenSSLError.drainErrorQueue()
            // -1: absent; anything else (twice, or present but unreadable) is not a list to trust.
            guard critical == -1 else { throw .malformed("reasonCode") }
            return nil
        }
        let enumerated = raw.assumingMemoryBound(to: ASN1_ENUMERATED.self)
        defer { ASN1_ENUMERATED_free(enumerated) }
        return .init(code: ASN1_ENUMERATED_get(enumerated))
    }

    /// The dotted form of an OID, for an error message.
    private static func dottedOID(_ object: OpaquePointer?) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1) > 0 else { return "(unreadable OID)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Refuses a list that does not speak about every certificate of the issuer for every reason.
    private static func checkCompleteness(_ crl: OpaquePointer, covering certificate: X509Certificate) throws(CRLError) {
        let count = X509_CRL_get_ext_count(crl)
        for index in 0..<max(count, 0) {
            guard let ext = X509_CRL_get_ext(crl, index) else { continue }
            let nid = OBJ_obj2nid(X509_EXTENSION_get_object(ext))
            if nid == NID_delta_crl { throw .unsupported("a delta CRL") }
            if X509_EXTENSION_get_critical(ext) != 0, nid != NID_issuing_distribution_point {
                throw .unsupported("unknown critical extension \(Self.dottedOID(X509_EXTENSION_get_object(ext)))")
            }
        }
        var critical: Int32 = 0
        guard let raw = X509_CRL_get_ext_d2i(crl, NID_issuing_distribution_point, &critical, nil) else {
            OpenSSLError.drainErrorQueue()
            guard critical == -1 else { throw .malformed("issuingDistributionPoint") }
            return
        }
        let point = raw.assumingMemoryBound(to: ISSUING_DIST_POINT.self)
        defer { ISSUING_DIST_POINT_free(point) }
        let scope = point.pointee
        if scope.indirectCRL != 0 { throw .unsupported("an indirect CRL") }
        if scope.onlysomereasons != nil { throw .unsupported("a CRL for some reasons only") }
        if scope.onlyattr != 0 { throw .unsupported("a CRL for attribute certificates only") }
        if scope.onlyuser != 0 && certificate.isCA { throw .unsupported("a CRL for end-entity certificates only") }
        if scope.onlyCA != 0 && !certificate.isCA { throw .unsupported("a CRL for CA certificates only") }
    }
}

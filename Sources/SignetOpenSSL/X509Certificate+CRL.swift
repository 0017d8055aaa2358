import COpenSSL

extension X509Certificate {
    /// The URIs of the cRLDistributionPoints extension's full names, in the certificate's
    /// order; empty when it has none. Points limited to some reasons or naming another CRL
    /// issuer (indirect CRLs) are left out: their list would not answer for every revocation.
    package var crlURLs: [String] {
        var critical: Int32 = 0
        guard let raw = X509_get_ext_d2i(pointer, NID_crl_distribution_points, &critical, nil) else {
            OpenSSLError.drainErrorQueue()
            return []
        }
        let points = OpaquePointer(raw)
        defer { CRL_DIST_POINTS_free(points) }
        var urls: [String] = []
        for index in 0..<max(OPENSSL_sk_num(points), 0) {
            guard let point = OPENSSL_sk_value(points, index)?.assumingMemoryBound(to: DIST_POINT.self).pointee,
                  point.reasons == nil, point.CRLissuer == nil,
                  let name = point.distpoint?.pointee, name.type == 0, let fullName = name.name.fullname
            else { continue }
            for nameIndex in 0..<max(OPENSSL_sk_num(fullName), 0) {
                guard let general = OPENSSL_sk_value(fullName, nameIndex)?.assumingMemoryBound(to: GENERAL_NAME.self).pointee,
                      general.type == GEN_URI, let uri = general.d.uniformResourceIdentifier,
                      let bytes = ASN1_STRING_get0_data(uri)
                else { continue }
                urls.append(String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(uri))), as: UTF8.self))
            }
        }
        return urls
    }
}

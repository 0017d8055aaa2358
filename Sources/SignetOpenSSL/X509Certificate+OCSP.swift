import COpenSSL

extension X509Certificate {
    /// The OCSP responder URLs of the authorityInfoAccess extension (`id-ad-ocsp`
    /// accessLocation URIs), in the certificate's order; empty when it names none.
    public var ocspURLs: [String] {
        guard let urls = X509_get1_ocsp(pointer) else {
            OpenSSLError.drainErrorQueue()
            return []
        }
        // X509_get1_ocsp copies the strings into a new stack; X509_email_free frees both.
        defer { X509_email_free(urls) }
        let count = OPENSSL_sk_num(urls)
        return (0..<max(count, 0)).compactMap { index in
            OPENSSL_sk_value(urls, index).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        }
    }
}

import COpenSSL

/// The set of trust anchors, held in an OpenSSL `X509_STORE`.
///
/// Only these certificates can end a chain: certificates that arrive with a message
/// (such as a JWS `x5c` array) are passed as *untrusted* intermediates and are never
/// added here.
///
/// `@unchecked Sendable`: the store is filled in `init` and never changed afterwards;
/// OpenSSL documents an `X509_STORE` as safe to share between threads for
/// verification (each verification uses its own `X509_STORE_CTX`, and the store's
/// lookups take the store's internal lock).
package final class TrustStore: @unchecked Sendable {
    /// The owned `X509_STORE*`.
    let store: OpaquePointer
    /// The trust anchors, in configuration order.
    package let roots: [X509Certificate]

    /// Builds a store holding exactly `roots` (an empty store trusts nothing).
    package init(roots: [X509Certificate]) throws(OpenSSLError) {
        guard let store = X509_STORE_new() else { throw OpenSSLError.drain("create X509_STORE") }
        for root in roots {
            // add_cert takes its own reference; a duplicate root is not an error.
            if X509_STORE_add_cert(store, root.pointer) != 1 {
                let error = OpenSSLError.drain("add root \(root.subject)")
                if !error.details.contains(where: { $0.contains("already in hash table") }) {
                    X509_STORE_free(store)
                    throw error
                }
            }
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }

    /// Whether a certificate with exactly these DER bytes is one of the roots.
    package func contains(_ certificate: X509Certificate) -> Bool {
        roots.contains { $0.derEncoded == certificate.derEncoded }
    }

    /// Whether a root has this SHA-256 fingerprint.
    package func contains(sha256Fingerprint: [UInt8]) -> Bool {
        roots.contains { $0.sha256Fingerprint == sha256Fingerprint }
    }
}

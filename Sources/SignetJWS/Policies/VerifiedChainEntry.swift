import SignetOpenSSL

/// What the chain cache remembers about a `(x5c[0], x5c[1])` pair that passed every
/// chain check: the combined validity window, the leaf's key and the chain itself.
final class VerifiedChainEntry: Sendable {
    let validFromEpochSeconds: Int64
    let validUntilEpochSeconds: Int64
    let leafKey: ECPublicKey
    /// Leaf, intermediate and the configured root they led to, built once here so every payload
    /// verified under the pair shares this one array (what a revocation check asks about).
    let chain: [X509Certificate]

    init(validFromEpochSeconds: Int64, validUntilEpochSeconds: Int64, leafKey: ECPublicKey, chain: [X509Certificate]) {
        self.validFromEpochSeconds = validFromEpochSeconds
        self.validUntilEpochSeconds = validUntilEpochSeconds
        self.leafKey = leafKey
        self.chain = chain
    }

    /// OpenSSL's rule for every certificate at once: `notBefore ≤ t < notAfter`.
    func isValid(atEpochSeconds seconds: Int64) -> Bool {
        validFromEpochSeconds <= seconds && seconds < validUntilEpochSeconds
    }
}

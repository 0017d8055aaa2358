import SignetOpenSSL

/// What the chain cache remembers about a `(x5c[0], x5c[1])` pair that passed every
/// chain check: the combined validity window, the leaf's key and the configured root it led to.
final class VerifiedChainEntry: Sendable {
    let validFromEpochSeconds: Int64
    let validUntilEpochSeconds: Int64
    let leafKey: ECPublicKey
    let root: X509Certificate

    init(validFromEpochSeconds: Int64, validUntilEpochSeconds: Int64, leafKey: ECPublicKey, root: X509Certificate) {
        self.validFromEpochSeconds = validFromEpochSeconds
        self.validUntilEpochSeconds = validUntilEpochSeconds
        self.leafKey = leafKey
        self.root = root
    }

    /// OpenSSL's rule for every certificate at once: `notBefore ≤ t < notAfter`.
    func isValid(atEpochSeconds seconds: Int64) -> Bool {
        validFromEpochSeconds <= seconds && seconds < validUntilEpochSeconds
    }
}

import CoreMetrics
import SignetCore
import SignetOpenSSL

/// Step 5 (``VerificationStep/appleChain``): `x5c[0]` → `x5c[1]` → a configured root
/// verifies with OpenSSL at the validation instant (`certificate_not_valid_at_signed_date`
/// for validity problems, `invalid_certificate_chain` for anything else), the chain is
/// exactly leaf → intermediate → root, and carries Apple's marker OIDs (`missing_apple_oid`).
///
/// Cache first: the chain cache only ever holds pairs that passed every check here, with
/// their combined validity window; an instant outside the window is re-verified from
/// scratch, so a cache never changes a verdict or a reason.
struct AppleChainPolicy: JWSVerificationPolicy {
    static let step = VerificationStep.appleChain

    let chainVerifier: CertificateChainVerifier
    let chainCache: BoundedCache<CertificatePairKey, VerifiedChainEntry>
    let metrics: VerifierCacheMetrics
    /// Only for the hint of an unknown-root rejection.
    let roots: [X509Certificate]
    /// Trusted uses after which a leaf key gets its table (``VerifierConfiguration/keyTableThreshold``).
    let keyTableThreshold: Int

    /// Returns the chain: leaf, intermediate and the configured root it led to (the cached
    /// entry's array, so a hit allocates nothing).
    func check(_ input: (header: ParsedJWSHeader, instant: ValidationInstant), role: JWSRole) throws(RecordRejection) -> [X509Certificate] {
        let (header, instant) = input
        let seconds = ValidationInstant.floorSeconds(instant.milliseconds)
        if let entry = chainCache.value(for: header.chainKey), entry.isValid(atEpochSeconds: seconds) {
            metrics.chainHits.increment()
            vouch(for: header)
            return entry.chain
        }
        metrics.chainMisses.increment()

        let chain: VerifiedChain
        do {
            chain = try chainVerifier.verify(leaf: header.leaf, intermediates: [header.intermediate], atEpochSeconds: seconds)
        } catch {
            throw rejection(error, header: header, instant: instant, role: role)
        }
        // Apple's chain policy: exactly leaf → intermediate → root, each with its marker OID.
        guard chain.certificates.count == 3 else {
            throw RecordRejection(
                .invalidCertificateChain,
                "\(role.field): the verified chain has \(chain.certificates.count) certificates; App Store chains are leaf → intermediate → root")
        }
        let leaf = chain.certificates[0]
        let intermediate = chain.certificates[1]
        guard intermediate.hasExtension(oid: AppStoreVerifier.wwdrIntermediateOID) else {
            throw RecordRejection(
                .missingAppleOID,
                "\(role.field): the intermediate (\(intermediate.subject)) lacks Apple's WWDR marker OID \(AppStoreVerifier.wwdrIntermediateOID)")
        }
        guard leaf.hasExtension(oid: AppStoreVerifier.receiptSigningLeafOID) else {
            throw RecordRejection(
                .missingAppleOID,
                "\(role.field): the leaf (\(leaf.subject)) lacks Apple's receipt-signing marker OID \(AppStoreVerifier.receiptSigningLeafOID)")
        }
        guard intermediate.isCA else {
            // OpenSSL already refuses a non-CA issuer; kept so the policy reads complete here.
            throw RecordRejection(.invalidCertificateChain, "\(role.field): the intermediate (\(intermediate.subject)) is not a CA")
        }
        if let usage = leaf.keyUsage, !usage.contains(.digitalSignature) {
            throw RecordRejection(
                .invalidCertificateChain, "\(role.field): the leaf (\(leaf.subject)) has keyUsage without digitalSignature, so it may not sign data")
        }
        guard let key = header.leafKey else {
            throw RecordRejection(.invalidCertificateChain, "\(role.field): \(header.leafKeyProblem ?? "the leaf certificate has no usable key")")
        }
        let entry = VerifiedChainEntry(
            validFromEpochSeconds: chain.validFromEpochSeconds, validUntilEpochSeconds: chain.validUntilEpochSeconds,
            leafKey: key, chain: [header.leaf, header.intermediate, chain.certificates[2]])
        chainCache.insert(entry, for: header.chainKey)
        vouch(for: header)
        return entry.chain
    }

    /// The header's leaf key signed under a chain that passed: one more trusted use towards
    /// its table (counted when this use built it).
    private func vouch(for header: ParsedJWSHeader) {
        if header.leafKey?.noteTrustedUse(threshold: keyTableThreshold) == true { metrics.keyTables.increment() }
    }

    private func rejection(
        _ error: ChainVerificationError, header: ParsedJWSHeader, instant: ValidationInstant, role: JWSRole
    ) -> RecordRejection {
        if error.isValidityProblem {
            return RecordRejection(
                .certificateNotValidAtSignedDate,
                "\(role.field): a certificate of the x5c chain is not valid at \(instant.description): \(error). Leaf \(header.leaf.subject) is valid \(ValidationInstant.iso(header.leaf.notBefore)) – \(ValidationInstant.iso(header.leaf.notAfter))")
        }
        let hint: String
        switch error.kind {
        case .unableToGetIssuer:
            hint = " — the chain does not lead to a configured root (roots: \(roots.map(\.subject).joined(separator: " | ")))"
        case .badSignature:
            hint = " — a certificate is not signed by the certificate above it"
        case .invalidCA:
            hint = " — the issuing certificate is not a CA"
        default:
            hint = ""
        }
        return RecordRejection(.invalidCertificateChain, "\(role.field): certificate chain rejected at \(instant.description): \(error)\(hint)")
    }
}

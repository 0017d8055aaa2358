public import Foundation
public import SignetOpenSSL

/// A private PKI shaped like Apple's App Store signing hierarchy, for tests, demos and
/// the `signet fixtures` command:
///
/// - root: self-signed, P-384, ecdsa-with-SHA384, CA (like Apple Root CA - G3);
/// - intermediate: P-384, CA, carries Apple's WWDR marker `1.2.840.113635.100.6.2.1`,
///   signed with SHA-384 by the root (like Apple WWDR CA G6);
/// - leaf: P-256, keyUsage digitalSignature, carries the receipt-signing marker
///   `1.2.840.113635.100.6.11.1`, signed with SHA-384 by the intermediate.
///
/// Validity is deterministic (default 2020-01-01 to 2045-01-01 for all three); the keys
/// are fresh per instance unless given. The root is *not* Apple's, so a verifier must be
/// configured with ``root`` (or ``rootPEM``) to accept data signed here — and a verifier
/// that trusts only Apple's root rejects all of it.
public struct TestPKI: Sendable {
    /// Apple's marker on the WWDR intermediate.
    public static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"
    /// Apple's marker on receipt-signing leaves.
    public static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    /// 2020-01-01T00:00:00Z.
    public static let defaultNotBefore = Date(timeIntervalSince1970: 1_577_836_800)
    /// 2045-01-01T00:00:00Z.
    public static let defaultNotAfter = Date(timeIntervalSince1970: 2_366_755_200)

    public let rootKey: ECPrivateKey
    public let root: X509Certificate
    public let intermediateKey: ECPrivateKey
    public let intermediate: X509Certificate
    public let leafKey: ECPrivateKey
    public let leaf: X509Certificate

    /// Builds the three-level PKI.
    ///
    /// - Parameters:
    ///   - notBefore: the start of all three certificates' validity.
    ///   - notAfter: the end of all three certificates' validity.
    ///   - leafNotBefore: overrides the leaf's start alone (expiry tests).
    ///   - leafNotAfter: overrides the leaf's end alone.
    ///   - rootKey: the root's key to reuse (e.g. loaded from PEM), for reproducible output.
    ///   - intermediateKey: the intermediate's key to reuse.
    ///   - leafKey: the leaf's key to reuse.
    ///   - name: distinguishes several PKIs in certificate subjects.
    ///   - intermediateOCSPURL: an authorityInfoAccess OCSP URL for the intermediate (answered
    ///     for the root); nil, the default, leaves the extension out.
    ///   - leafOCSPURL: the same for the leaf (answered for the intermediate).
    ///   - intermediateCRLURL: a cRLDistributionPoints URL for the intermediate (a list the root
    ///     signs); nil leaves it out.
    ///   - leafCRLURL: the same for the leaf (a list the intermediate signs).
    public init(
        notBefore: Date = TestPKI.defaultNotBefore,
        notAfter: Date = TestPKI.defaultNotAfter,
        leafNotBefore: Date? = nil,
        leafNotAfter: Date? = nil,
        rootKey: ECPrivateKey? = nil,
        intermediateKey: ECPrivateKey? = nil,
        leafKey: ECPrivateKey? = nil,
        name: String = "Signet Fixtures",
        intermediateOCSPURL: String? = nil,
        leafOCSPURL: String? = nil,
        intermediateCRLURL: String? = nil,
        leafCRLURL: String? = nil
    ) throws(OpenSSLError) {
        let rootKey = try Self.key(rootKey, .p384)
        let intermediateKey = try Self.key(intermediateKey, .p384)
        let leafKey = try Self.key(leafKey, .p256)
        let root = try Self.makeRoot(key: rootKey, commonName: "\(name) Test Root CA - G3", notBefore: notBefore, notAfter: notAfter)
        let intermediate = try Self.makeIntermediate(
            key: intermediateKey, commonName: "\(name) Test WWDR CA", issuer: root, issuerKey: rootKey,
            notBefore: notBefore, notAfter: notAfter, ocspURL: intermediateOCSPURL, crlURL: intermediateCRLURL)
        let leaf = try Self.makeLeaf(
            key: leafKey, commonName: "\(name) Test Receipt Signing", issuer: intermediate, issuerKey: intermediateKey,
            notBefore: leafNotBefore ?? notBefore, notAfter: leafNotAfter ?? notAfter,
            serialNumber: try Self.serialNumber(of: leafKey), ocspURL: leafOCSPURL, crlURL: leafCRLURL)
        self.rootKey = rootKey
        self.root = root
        self.intermediateKey = intermediateKey
        self.intermediate = intermediate
        self.leafKey = leafKey
        self.leaf = leaf
    }

    /// A leaf's serial number derived from its key: the same key keeps its serial across
    /// calls (and its revocation entries stay valid), and two PKIs' leaves differ, so one
    /// leaf can be revoked alone (an issuer's serials must be unique). Positive, 63 bits.
    static func serialNumber(of key: ECPrivateKey) throws(OpenSSLError) -> UInt64 {
        let digest = SHA256.hash(try key.publicKey.subjectPublicKeyInfoDER)
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return max(value & 0x7FFF_FFFF_FFFF_FFFF, 0x1_0000)
    }

    /// The root certificate in PEM, to configure a verifier or write a roots file.
    public var rootPEM: String { root.pemEncoded }

    /// `[leaf, intermediate, root]`, the order of a JWS `x5c` header.
    public var chain: [X509Certificate] { [leaf, intermediate, root] }

    /// A signer producing ES256 JWS with this PKI's leaf key and chain.
    public var signer: JWSSigner { JWSSigner(pki: self) }

    /// Issues another leaf under this PKI's intermediate (expired, OID-less, ... variants).
    public func issueLeaf(
        key: ECPrivateKey, notBefore: Date? = nil, notAfter: Date? = nil, includeMarkerOID: Bool = true,
        keyUsage: KeyUsage? = .digitalSignature, serialNumber: UInt64 = 0x1001, commonName: String = "Signet Fixtures Test Receipt Signing"
    ) throws(OpenSSLError) -> X509Certificate {
        try Self.makeLeaf(
            key: key, commonName: commonName, issuer: intermediate, issuerKey: intermediateKey,
            notBefore: notBefore ?? leaf.notBefore, notAfter: notAfter ?? leaf.notAfter,
            includeMarkerOID: includeMarkerOID, keyUsage: keyUsage, serialNumber: serialNumber)
    }

    /// Issues another intermediate under this PKI's root (non-CA, OID-less, ... variants).
    public func issueIntermediate(
        key: ECPrivateKey, isCA: Bool = true, includeMarkerOID: Bool = true, serialNumber: UInt64 = 0x2001,
        commonName: String = "Signet Fixtures Test WWDR CA"
    ) throws(OpenSSLError) -> X509Certificate {
        try Self.makeIntermediate(
            key: key, commonName: commonName, issuer: root, issuerKey: rootKey, notBefore: root.notBefore,
            notAfter: root.notAfter, isCA: isCA, includeMarkerOID: includeMarkerOID, serialNumber: serialNumber)
    }

    /// Issues a delegated OCSP responder certificate (extendedKeyUsage OCSPSigning) under the
    /// root (it may answer for the intermediate) or under the intermediate (for leaves).
    public func issueOCSPResponder(
        key: ECPrivateKey, issuedByRoot: Bool = false, serialNumber: UInt64 = 0x4001,
        commonName: String = "Signet Fixtures Test OCSP Responder"
    ) throws(OpenSSLError) -> X509Certificate {
        let builder = CertificateBuilder(
            subjectCommonName: commonName, subjectOrganization: "Signet Fixtures", subjectOrganizationalUnit: "Test",
            serialNumber: serialNumber, notBefore: root.notBefore, notAfter: root.notAfter, publicKey: try key.publicKey,
            isCA: false, keyUsage: .digitalSignature, signatureHash: .sha384, extendedKeyUsage: ["OCSPSigning"])
        return issuedByRoot
            ? try builder.sign(issuer: root, issuerKey: rootKey) : try builder.sign(issuer: intermediate, issuerKey: intermediateKey)
    }

    // MARK: - Building blocks

    private static func key(_ given: ECPrivateKey?, _ curve: ECCurve) throws(OpenSSLError) -> ECPrivateKey {
        if let given { return given }
        return try ECPrivateKey(generating: curve)
    }

    /// A self-signed CA root (ecdsa-with-SHA384, keyCertSign + cRLSign).
    public static func makeRoot(
        key: ECPrivateKey, commonName: String, notBefore: Date, notAfter: Date, serialNumber: UInt64 = 0x0100
    ) throws(OpenSSLError) -> X509Certificate {
        let builder = CertificateBuilder(
            subjectCommonName: commonName, subjectOrganization: "Signet Fixtures", subjectOrganizationalUnit: "Test Certification Authority",
            serialNumber: serialNumber, notBefore: notBefore, notAfter: notAfter, publicKey: try key.publicKey,
            isCA: true, keyUsage: [.keyCertSign, .cRLSign], signatureHash: .sha384)
        return try builder.sign(issuer: nil, issuerKey: key)
    }

    /// An intermediate signed by `issuer` (basicConstraints CA as given, optional WWDR marker).
    public static func makeIntermediate(
        key: ECPrivateKey, commonName: String, issuer: X509Certificate, issuerKey: ECPrivateKey,
        notBefore: Date, notAfter: Date, isCA: Bool = true, includeMarkerOID: Bool = true, serialNumber: UInt64 = 0x0200,
        ocspURL: String? = nil, crlURL: String? = nil
    ) throws(OpenSSLError) -> X509Certificate {
        let builder = CertificateBuilder(
            subjectCommonName: commonName, subjectOrganization: "Signet Fixtures", subjectOrganizationalUnit: "G6",
            serialNumber: serialNumber, notBefore: notBefore, notAfter: notAfter, publicKey: try key.publicKey,
            isCA: isCA, pathLength: isCA ? 0 : nil, keyUsage: isCA ? [.keyCertSign, .cRLSign] : [.digitalSignature],
            customExtensions: includeMarkerOID ? [.init(oid: intermediateMarkerOID)] : [], signatureHash: .sha384, ocspURL: ocspURL,
            crlURL: crlURL)
        return try builder.sign(issuer: issuer, issuerKey: issuerKey)
    }

    /// A receipt-signing leaf signed by `issuer` (not a CA, optional marker and keyUsage).
    public static func makeLeaf(
        key: ECPrivateKey, commonName: String, issuer: X509Certificate, issuerKey: ECPrivateKey,
        notBefore: Date, notAfter: Date, includeMarkerOID: Bool = true, keyUsage: KeyUsage? = .digitalSignature,
        serialNumber: UInt64 = 0x0300, ocspURL: String? = nil, crlURL: String? = nil
    ) throws(OpenSSLError) -> X509Certificate {
        let builder = CertificateBuilder(
            subjectCommonName: commonName, subjectOrganization: "Signet Fixtures", subjectOrganizationalUnit: "Test",
            serialNumber: serialNumber, notBefore: notBefore, notAfter: notAfter, publicKey: try key.publicKey,
            isCA: false, keyUsage: keyUsage,
            customExtensions: includeMarkerOID ? [.init(oid: leafMarkerOID)] : [], signatureHash: .sha384, ocspURL: ocspURL,
            crlURL: crlURL)
        return try builder.sign(issuer: issuer, issuerKey: issuerKey)
    }
}

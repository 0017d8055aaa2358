import COpenSSL

/// An EC private key (P-256 or P-384) for test PKIs and tooling: generation, PEM
/// import/export, raw `r || s` signing and certificate signing.
///
/// `@unchecked Sendable`: the `EVP_PKEY` / `EC_KEY` pair is never mutated after
/// `init`; signing only reads the key and draws nonces from OpenSSL's thread-safe
/// DRBG, so signing from several threads at once is safe.
public final class ECPrivateKey: @unchecked Sendable, CustomStringConvertible {
    /// The owned `EVP_PKEY*` (used to sign certificates).
    let pkey: OpaquePointer
    /// The owned legacy `EC_KEY*` (used for direct ECDSA signing).
    let ecKey: OpaquePointer
    /// The key's curve.
    public let curve: ECCurve

    /// Generates a fresh key on `curve`.
    public init(generating curve: ECCurve) throws(OpenSSLError) {
        guard let ecKey = EC_KEY_new_by_curve_name(curve.nid) else { throw OpenSSLError.drain("create EC key") }
        // Named-curve encoding, as in every real certificate (never explicit parameters).
        EC_KEY_set_asn1_flag(ecKey, OPENSSL_EC_NAMED_CURVE)
        guard EC_KEY_generate_key(ecKey) == 1, let pkey = EVP_PKEY_new() else {
            EC_KEY_free(ecKey)
            throw OpenSSLError.drain("generate \(curve) key")
        }
        guard EVP_PKEY_set1_EC_KEY(pkey, ecKey) == 1 else {
            EVP_PKEY_free(pkey)
            EC_KEY_free(ecKey)
            throw OpenSSLError.drain("wrap EC key")
        }
        self.pkey = pkey
        self.ecKey = ecKey
        self.curve = curve
    }

    /// Imports a PEM private key (PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`). An
    /// encrypted one is refused with an error saying so: OpenSSL would otherwise ask for its
    /// password on the terminal, stalling a service.
    public init(pemEncoded: String) throws(OpenSSLError) {
        if pemEncoded.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pemEncoded.contains("Proc-Type: 4,ENCRYPTED") {
            throw OpenSSLError(
                operation: "PEM private key is encrypted (password-protected); use the key unencrypted, as App Store Connect issues it (openssl pkey -in encrypted.pem -out key.p8 decrypts one)")
        }
        let pkey = try OpenSSLSupport.withReadBIO(Array(pemEncoded.utf8)) { bio in
            // A password callback that has none: never OpenSSL's default, which prompts on the terminal.
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let pkey else { throw OpenSSLError.drain("parse PEM private key") }
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC, let ecKey = EVP_PKEY_get1_EC_KEY(pkey) else {
            EVP_PKEY_free(pkey)
            throw OpenSSLError.drain("PEM private key is not an EC key")
        }
        guard let group = EC_KEY_get0_group(ecKey), let curve = ECCurve(nid: EC_GROUP_get_curve_name(group)) else {
            EC_KEY_free(ecKey)
            EVP_PKEY_free(pkey)
            throw OpenSSLError(operation: "PEM private key is on an unsupported curve")
        }
        self.pkey = pkey
        self.ecKey = ecKey
        self.curve = curve
    }

    deinit {
        EC_KEY_free(ecKey)
        EVP_PKEY_free(pkey)
    }

    /// Unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public var pemEncoded: String {
        let bytes = (try? OpenSSLSupport.collectBIO("write PEM private key") { bio in
            PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil)
        }) ?? []
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The matching public key.
    package var publicKey: ECPublicKey {
        get throws(OpenSSLError) {
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_EC_PUBKEY(ecKey, &out)
            guard length > 0, let out else { throw OpenSSLError.drain("encode public key") }
            defer { CRYPTO_free(out, #fileID, #line) }
            return try ECPublicKey(subjectPublicKeyInfoDER: Array(UnsafeBufferPointer(start: out, count: Int(length))))
        }
    }

    /// Signs `message` the way ES256 does: SHA-256, ECDSA, raw `r || s`.
    ///
    /// The halves are as wide as the key's curve, so a P-256 key yields the 64 bytes
    /// ES256 requires; a P-384 key yields 96 bytes (useful for forging tests).
    public func signES256(_ message: [UInt8]) throws(OpenSSLError) -> [UInt8] {
        try signRaw(digest: SHA256.hash(message))
    }

    /// ECDSA-signs a precomputed digest and returns raw `r || s`.
    public func signRaw(digest: [UInt8]) throws(OpenSSLError) -> [UInt8] {
        let half = curve.coordinateByteCount
        return try withSignature(digest) { (r, s) throws(OpenSSLError) -> [UInt8] in
            var raw = [UInt8](repeating: 0, count: 2 * half)
            let ok = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, Int32(half)) == Int32(half)
                    && BN_bn2binpad(s, out.baseAddress! + half, Int32(half)) == Int32(half)
            }
            guard ok else { throw OpenSSLError.drain("encode raw signature") }
            return raw
        }
    }

    /// ECDSA-signs a precomputed digest and returns the DER `ECDSA-Sig-Value`
    /// (what X.509 uses, and what a JWS must *not* carry).
    public func signDER(digest: [UInt8]) throws(OpenSSLError) -> [UInt8] {
        guard let signature = digest.withUnsafeBufferPointer({ ECDSA_do_sign($0.baseAddress, Int32($0.count), ecKey) }) else {
            throw OpenSSLError.drain("ECDSA sign")
        }
        defer { ECDSA_SIG_free(signature) }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { throw OpenSSLError.drain("encode DER signature") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    private func withSignature<R>(
        _ digest: [UInt8], _ body: (OpaquePointer, OpaquePointer) throws(OpenSSLError) -> R
    ) throws(OpenSSLError) -> R {
        guard let signature = digest.withUnsafeBufferPointer({ ECDSA_do_sign($0.baseAddress, Int32($0.count), ecKey) }) else {
            throw OpenSSLError.drain("ECDSA sign")
        }
        defer { ECDSA_SIG_free(signature) }
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else {
            throw OpenSSLError.drain("read ECDSA signature")
        }
        return try body(r, s)
    }

    public var description: String { "ECPrivateKey(\(curve))" }
}

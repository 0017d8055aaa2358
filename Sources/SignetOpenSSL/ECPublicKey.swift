import COpenSSL
import Synchronization

/// An EC public key (P-256 or P-384) that owns a legacy OpenSSL `EC_KEY`.
///
/// Verification goes straight to `ECDSA_do_verify` on the cached `EC_KEY`: no
/// `EVP_PKEY_CTX` allocation, no provider dispatch and no DER round trip of the
/// signature per call, which is the fastest correct path in OpenSSL 3.0.
///
/// A P-256 key that a caller vouches for often (``noteTrustedUse(threshold:)``: an Apple
/// leaf whose chain verified) gets a ``P256KeyTable``, which halves each verification.
///
/// `@unchecked Sendable`: the `EC_KEY` is fully built in `init` and never mutated
/// afterwards. `ECDSA_do_verify` only reads the key's group and public point and
/// allocates its own `BN_CTX` per call, so concurrent verifications with one shared
/// key are safe (the same pattern TLS servers rely on for shared certificates). The
/// table's state is behind a `Mutex`.
package final class ECPublicKey: @unchecked Sendable, CustomStringConvertible {
    /// The owned `EC_KEY*`.
    let key: OpaquePointer
    /// The key's curve.
    package let curve: ECCurve
    private let table = Mutex(TableState.counting(0))

    /// Whether this key verifies through a ``P256KeyTable`` yet.
    private enum TableState {
        /// Trusted uses so far.
        case counting(Int)
        /// One caller is building the table; the others verify the plain way meanwhile.
        case building
        case built(P256KeyTable)
        /// OpenSSL refused the table: the plain way for good.
        case unavailable
    }

    init(takingOwnership ecKey: OpaquePointer) throws(OpenSSLError) {
        guard let group = EC_KEY_get0_group(ecKey), EC_KEY_get0_public_key(ecKey) != nil else {
            EC_KEY_free(ecKey)
            throw OpenSSLError(operation: "EC key has no group or public point")
        }
        guard let curve = ECCurve(nid: EC_GROUP_get_curve_name(group)) else {
            let nid = EC_GROUP_get_curve_name(group)
            EC_KEY_free(ecKey)
            throw OpenSSLError(operation: "unsupported EC curve (NID \(nid)); only P-256 and P-384 are accepted")
        }
        self.key = ecKey
        self.curve = curve
    }

    /// Parses a DER SubjectPublicKeyInfo holding a P-256 or P-384 key.
    package convenience init(subjectPublicKeyInfoDER der: [UInt8]) throws(OpenSSLError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_EC_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw OpenSSLError.drain("parse EC SubjectPublicKeyInfo") }
        try self.init(takingOwnership: parsed)
    }

    deinit { EC_KEY_free(key) }

    /// DER SubjectPublicKeyInfo.
    package var subjectPublicKeyInfoDER: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_EC_PUBKEY(key, &out)
        guard length > 0, let out else { OpenSSLError.drainErrorQueue(); return [] }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The uncompressed point `04 || x || y` (for JWK export in tests and tooling).
    package var uncompressedPoint: [UInt8] {
        guard let group = EC_KEY_get0_group(key), let point = EC_KEY_get0_public_key(key) else { return [] }
        var buffer = [UInt8](repeating: 0, count: 1 + 2 * curve.coordinateByteCount)
        let written = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &buffer, buffer.count, nil)
        return Array(buffer.prefix(written))
    }

    /// Verifies an ES256 JWS signature: `rawSignature` is exactly 64 bytes `r || s`
    /// (RFC 7518 §3.4) and `digest` the SHA-256 of the signing input.
    ///
    /// Returns false, never traps, for any malformed input: wrong lengths, r or s
    /// zero or ≥ the group order, or a key that is not on P-256.
    package func verifyES256(rawSignature: UnsafeRawBufferPointer, digest: UnsafeRawBufferPointer) -> Bool {
        guard curve == .p256, digest.count == SHA256.byteCount else { return false }
        if let built = builtTable { return built.verify(rawSignature: rawSignature, digest: digest) }
        return verifyRaw(rawSignature: rawSignature, digest: digest)
    }

    /// Counts one verification that a trusted party vouched for (the verifier calls it when
    /// the key's certificate chained to a configured root). The use that reaches `threshold`
    /// builds the key's ``P256KeyTable`` on the caller's thread, once (about 26 ms); later
    /// ``verifyES256(rawSignature:digest:)`` calls use it.
    ///
    /// Only trusted uses count, so a stream of self-made keys never costs anyone a table; the
    /// threshold keeps a one-off verification from paying for one. 0 never builds. Returns
    /// whether this call built the table.
    @discardableResult
    package func noteTrustedUse(threshold: Int) -> Bool {
        guard curve == .p256, threshold > 0 else { return false }
        let build = table.withLock { state -> Bool in
            guard case .counting(let uses) = state else { return false }
            state = uses + 1 >= threshold ? .building : .counting(uses + 1)
            return uses + 1 >= threshold
        }
        guard build else { return false }
        let built = P256KeyTable(key: self)
        table.withLock { $0 = built.map(TableState.built) ?? .unavailable }
        return built != nil
    }

    /// Whether ``verifyES256(rawSignature:digest:)`` goes through a ``P256KeyTable``.
    package var hasTable: Bool { builtTable != nil }

    private var builtTable: P256KeyTable? {
        table.withLock { state in
            if case .built(let built) = state { return built }
            return nil
        }
    }

    /// Verifies an ES256 signature over `message` (hashes it with SHA-256 first).
    package func verifyES256(rawSignature: [UInt8], message: [UInt8]) -> Bool {
        let digest = SHA256.hash(message)
        return rawSignature.withUnsafeBytes { signature in
            digest.withUnsafeBytes { verifyES256(rawSignature: signature, digest: $0) }
        }
    }

    /// Verifies a raw `r || s` ECDSA signature (each half the curve's coordinate size)
    /// over a precomputed digest of any length.
    package func verifyRaw(rawSignature: UnsafeRawBufferPointer, digest: UnsafeRawBufferPointer) -> Bool {
        let half = curve.coordinateByteCount
        guard rawSignature.count == 2 * half, let base = rawSignature.baseAddress,
              let digestBase = digest.baseAddress
        else { return false }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        guard let r = BN_bin2bn(bytes, Int32(half), nil) else { ERR_clear_error(); return false }
        guard let s = BN_bin2bn(bytes + half, Int32(half), nil) else {
            BN_free(r)
            ERR_clear_error()
            return false
        }
        guard let signature = ECDSA_SIG_new() else {
            BN_free(r)
            BN_free(s)
            ERR_clear_error()
            return false
        }
        defer { ECDSA_SIG_free(signature) }
        // set0 transfers r and s to the signature (freed with it).
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            ERR_clear_error()
            return false
        }
        let result = ECDSA_do_verify(
            digestBase.assumingMemoryBound(to: UInt8.self), Int32(digest.count), signature, key)
        // 0 = bad signature, -1 = error: both are "no"; leave no error behind on this thread.
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    package var description: String { "ECPublicKey(\(curve))" }
}

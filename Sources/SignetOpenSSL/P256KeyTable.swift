import COpenSSL

/// ES256 verification against one P-256 public key `Q` whose multiples are precomputed, as
/// OpenSSL precomputes the curve's generator `G`.
///
/// `ECDSA_do_verify` computes `u1·G + u2·Q` in one call: `u1·G` reads OpenSSL's built-in
/// table of multiples of `G` (about 8 µs here), while `u2·Q` runs a windowed ladder over a
/// point it has never seen (about 47 µs). App Store data is signed by a handful of Apple
/// leaf keys, each for months, so the second product can read a table too: a copy of the
/// P-256 group whose generator is `Q`, with `EC_GROUP_precompute_mult` run on it once
/// (about 26 ms and 150 KB a key). A verification then takes about 37 µs instead of 68.
///
/// The equation is ECDSA's (SEC 1 §4.1.4, as OpenSSL's `ossl_ecdsa_simple_verify_sig`
/// evaluates it), every step an OpenSSL call: `r` and `s` in `[1, n−1]`,
/// `w = s⁻¹ mod n`, `u1 = e·w`, `u2 = r·w`, `R = u1·G + u2·Q` not at infinity, and
/// `x(R) mod n = r`. A table only changes how fast `u2·Q` is found, never the verdict:
/// tests compare it with `ECDSA_do_verify` on valid, altered and out-of-range signatures,
/// and a table that disagrees with the plain product at build time is never used.
///
/// `@unchecked Sendable`: both groups are built and precomputed in `init` and never
/// mutated afterwards; `EC_POINT_mul` with only a generator scalar and `EC_POINT_add`
/// read a group (and its table) without writing it, and every call brings its own
/// `BN_CTX` and points, so verifications on many threads may share one table.
package final class P256KeyTable: @unchecked Sendable {
    /// The standard P-256 group (owned).
    private let curve: OpaquePointer
    /// P-256 with `Q` as its generator and `Q`'s multiples precomputed (owned).
    private let keyGroup: OpaquePointer

    /// Builds the table for `key`, or nil when OpenSSL refuses any step or the table's
    /// product differs from the plain one (the key then keeps `ECDSA_do_verify`).
    package init?(key: ECPublicKey) {
        guard key.curve == .p256, let keyCurve = EC_KEY_get0_group(key.key), let point = EC_KEY_get0_public_key(key.key),
              EC_POINT_is_at_infinity(keyCurve, point) == 0,
              let curve = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
        else { ERR_clear_error(); return nil }
        guard let keyGroup = EC_GROUP_dup(curve) else {
            EC_GROUP_free(curve)
            ERR_clear_error()
            return nil
        }
        self.curve = curve
        self.keyGroup = keyGroup
        // From here a failure returns nil and deinit frees both groups.
        guard let context = BN_CTX_new() else { ERR_clear_error(); return nil }
        defer { BN_CTX_free(context) }
        guard let order = EC_GROUP_get0_order(curve),
              EC_GROUP_set_generator(keyGroup, point, order, BN_value_one()) == 1,
              EC_GROUP_precompute_mult(keyGroup, context) == 1,
              EC_GROUP_have_precompute_mult(keyGroup) == 1,
              Self.agreesWithPlainProduct(curve: curve, keyGroup: keyGroup, point: point, context: context)
        else { ERR_clear_error(); return nil }
    }

    deinit {
        EC_GROUP_free(keyGroup)
        EC_GROUP_free(curve)
    }

    /// Verifies a JWS ES256 signature: `rawSignature` is `r‖s` (64 bytes) and `digest` the
    /// SHA-256 of the signing input (32 bytes). False, never a trap, for anything malformed.
    package func verify(rawSignature: UnsafeRawBufferPointer, digest: UnsafeRawBufferPointer) -> Bool {
        guard rawSignature.count == 64, digest.count == 32,
              let signature = rawSignature.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let digestBytes = digest.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let context = BN_CTX_new()
        else { return false }
        defer { BN_CTX_free(context) }
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        let valid = evaluate(signature: signature, digest: digestBytes, context: context)
        if !valid { ERR_clear_error() }
        return valid
    }

    private func evaluate(signature: UnsafePointer<UInt8>, digest: UnsafePointer<UInt8>, context: OpaquePointer) -> Bool {
        // BN_CTX_get fails only on allocation failure, and then every later call does too.
        guard let r = BN_CTX_get(context), let s = BN_CTX_get(context), let w = BN_CTX_get(context),
              let u1 = BN_CTX_get(context), let u2 = BN_CTX_get(context), let x = BN_CTX_get(context),
              let order = EC_GROUP_get0_order(curve),
              BN_bin2bn(signature, 32, r) != nil, BN_bin2bn(signature + 32, 32, s) != nil
        else { return false }
        guard BN_is_zero(r) == 0, BN_is_zero(s) == 0, BN_ucmp(r, order) < 0, BN_ucmp(s, order) < 0 else { return false }
        // The digest is exactly 256 bits, the order's length: e is the digest, unshifted.
        guard BN_mod_inverse(w, s, order, context) != nil, BN_bin2bn(digest, 32, u1) != nil,
              BN_mod_mul(u1, u1, w, order, context) == 1, BN_mod_mul(u2, r, w, order, context) == 1
        else { return false }
        guard let sum = EC_POINT_new(curve) else { return false }
        defer { EC_POINT_free(sum) }
        guard let keyMultiple = EC_POINT_new(keyGroup) else { return false }
        defer { EC_POINT_free(keyMultiple) }
        guard EC_POINT_mul(curve, sum, u1, nil, nil, context) == 1,
              EC_POINT_mul(keyGroup, keyMultiple, u2, nil, nil, context) == 1,
              EC_POINT_add(curve, sum, sum, keyMultiple, context) == 1,
              EC_POINT_is_at_infinity(curve, sum) == 0,
              EC_POINT_get_affine_coordinates(curve, sum, x, nil, context) == 1,
              BN_nnmod(x, x, order, context) == 1
        else { return false }
        return BN_cmp(x, r) == 0
    }

    /// `k·Q` from the table equals `k·Q` from OpenSSL's plain ladder for a fixed odd `k`
    /// with bits across the whole scalar, so a table built wrongly is never trusted.
    private static func agreesWithPlainProduct(
        curve: OpaquePointer, keyGroup: OpaquePointer, point: OpaquePointer, context: OpaquePointer
    ) -> Bool {
        var scalarBytes = [UInt8](repeating: 0, count: 32)
        for index in scalarBytes.indices { scalarBytes[index] = UInt8(truncatingIfNeeded: 0x9E &* (index &+ 1) &+ 0x37) }
        guard let scalar = BN_bin2bn(scalarBytes, 32, nil) else { return false }
        defer { BN_free(scalar) }
        guard let fromTable = EC_POINT_new(keyGroup) else { return false }
        defer { EC_POINT_free(fromTable) }
        guard let plain = EC_POINT_new(curve) else { return false }
        defer { EC_POINT_free(plain) }
        guard EC_POINT_mul(keyGroup, fromTable, scalar, nil, nil, context) == 1,
              EC_POINT_mul(curve, plain, nil, point, scalar, context) == 1
        else { return false }
        return EC_POINT_cmp(curve, fromTable, plain, context) == 0
    }
}

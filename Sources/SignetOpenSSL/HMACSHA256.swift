import COpenSSL

/// One-shot HMAC-SHA256 (OpenSSL's `HMAC`), for signing HTTP sink bodies so the
/// receiver can authenticate Signet, and a comparison that takes the same time
/// wherever two values differ.
package enum HMACSHA256 {
    /// Tag length in bytes.
    package static let byteCount = 32

    /// HMAC-SHA256 of `message` under `key`.
    package static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        // HMAC pads the key with zeros to the block size, so an empty key and one zero
        // byte give the same tag; the substitute only guarantees a non-null key pointer.
        let key = key.isEmpty ? [0] : key
        key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                tag.withUnsafeMutableBufferPointer { out in
                    // HMAC fails only for an unknown digest; EVP_sha256 always exists.
                    _ = HMAC(
                        EVP_sha256(), keyBytes.baseAddress, Int32(clamping: keyBytes.count),
                        messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                        out.baseAddress, &length)
                }
            }
        }
        return tag
    }

    /// Lower-case hex of `bytes` (the `X-Signet-Signature` encoding).
    package static func hex(_ bytes: [UInt8]) -> String { SHA256.hex(bytes) }

    /// Whether `a` equals `b`, in time that depends only on their lengths' maximum: both
    /// are first hashed to 32 bytes, then compared with `CRYPTO_memcmp`, so neither the
    /// position of the first difference nor a length mismatch shows in the timing.
    package static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let left = SHA256.hash(a)
        let right = SHA256.hash(b)
        let differs = left.withUnsafeBytes { l in
            right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, SHA256.byteCount) }
        }
        return differs == 0
    }
}

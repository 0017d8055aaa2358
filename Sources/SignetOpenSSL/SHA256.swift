import COpenSSL

/// One-shot SHA-256.
///
/// Uses the low-level `SHA256_Init/Update/Final` functions (deprecated in OpenSSL 3
/// but still present and exported): unlike `EVP_Digest` or OpenSSL 3's `SHA256()`,
/// they do no provider lookup per call, which matters because every JWS verification
/// hashes its signing input. The context lives on the stack, so the call is
/// reentrant and thread-safe.
package enum SHA256 {
    /// Digest length in bytes.
    package static let byteCount = 32

    /// SHA-256 of `bytes`.
    package static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var context = SHA256_CTX()
        // These calls cannot fail for in-memory input (they only return 1).
        SHA256_Init(&context)
        update(&context, bytes)
        return final(&context)
    }

    /// The state after hashing a fixed prefix, to finish many messages that start with it
    /// without hashing the prefix again. A JWS signing input begins with its header
    /// segment (about 2.9 KB of base64 certificates), the same for every notification Apple
    /// signs with one leaf: caching this state with the parsed header removes 45 % of the
    /// bytes each verification hashes, and the digest is bit for bit the one-shot digest.
    package struct Midstate: Sendable {
        private let context: SHA256_CTX
        /// How many bytes the prefix had.
        package let prefixCount: Int

        /// The state after `prefix` followed by `separator`.
        package init(prefix: UnsafeRawBufferPointer, separator: UInt8) {
            var context = SHA256_CTX()
            SHA256_Init(&context)
            SHA256.update(&context, prefix)
            var separator = separator
            SHA256_Update(&context, &separator, 1)
            self.context = context
            self.prefixCount = prefix.count + 1
        }

        /// SHA-256 of the prefix followed by `rest`. The context is copied, so one
        /// midstate finishes any number of messages, from any thread.
        package func finish(_ rest: UnsafeRawBufferPointer) -> [UInt8] {
            var context = context
            SHA256.update(&context, rest)
            return SHA256.final(&context)
        }
    }

    /// SHA-256 of a message given in pieces (a list too long to join first).
    package struct Stream {
        private var context = SHA256_CTX()

        package init() { SHA256_Init(&context) }

        /// Hashes `string`'s UTF-8 bytes next.
        package mutating func update(_ string: String) {
            var string = string
            string.withUTF8 { SHA256.update(&context, UnsafeRawBufferPointer($0)) }
        }

        /// The digest of everything hashed so far.
        package mutating func finish() -> [UInt8] { SHA256.final(&context) }
    }

    /// Hashes `bytes` into `context` (an empty buffer may have no base address).
    private static func update(_ context: inout SHA256_CTX, _ bytes: UnsafeRawBufferPointer) {
        if let base = bytes.baseAddress, bytes.count > 0 { SHA256_Update(&context, base, bytes.count) }
    }

    /// The digest of `context` (which it ends).
    private static func final(_ context: inout SHA256_CTX) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        digest.withUnsafeMutableBufferPointer { out in
            _ = SHA256_Final(out.baseAddress, &context)
        }
        return digest
    }

    /// SHA-256 of a byte collection.
    package static func hash<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { hash($0) }
    }

    /// SHA-256 of a string's UTF-8 bytes.
    package static func hash(_ string: String) -> [UInt8] {
        var string = string
        return string.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// Lowercase hex of a digest (or of any bytes).
    package static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` spells in hex (either case), nil when it is not an even run of hex digits.
    package static func bytes<Text: StringProtocol>(hex text: Text) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}

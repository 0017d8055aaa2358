/// Strict Base64 (RFC 4648 §4) and Base64URL (§5) decoding, and encoding.
///
/// Strict means: only the alphabet of the chosen variant, no whitespace, padding
/// exactly as the variant demands, and the unused low bits of the last character
/// must be zero. The last rule makes the encoding canonical, so two different
/// strings never decode to the same bytes (a JWS string cannot be re-spelled into
/// a "new" message that decodes identically). Every input, including arbitrary
/// binary garbage, either decodes or throws; nothing traps.
package enum Base64 {
    /// Decodes standard Base64 (`+`, `/`, `=` padding required to a multiple of 4),
    /// as used for `x5c` certificates (RFC 7515 §4.1.6).
    package static func decode<Bytes: Collection<UInt8>>(_ input: Bytes) throws(Base64Error) -> [UInt8] {
        try run(input, table: standardTable, padded: true).get()
    }

    /// Decodes a standard Base64 string.
    package static func decode(_ string: String) throws(Base64Error) -> [UInt8] {
        try run(string.utf8, table: standardTable, padded: true).get()
    }

    /// Decodes Base64URL without padding (`-`, `_`; `=` is rejected), as used by
    /// every JWS compact-serialization segment (RFC 7515 §2).
    package static func decodeURL<Bytes: Collection<UInt8>>(_ input: Bytes) throws(Base64Error) -> [UInt8] {
        try run(input, table: urlTable, padded: false).get()
    }

    /// Decodes a Base64URL string (no padding).
    package static func decodeURL(_ string: String) throws(Base64Error) -> [UInt8] {
        try run(string.utf8, table: urlTable, padded: false).get()
    }

    /// Decodes raw bytes in place, without copying them first (the JWS hot path).
    package static func decodeURL(_ raw: UnsafeRawBufferPointer) throws(Base64Error) -> [UInt8] {
        try decode(raw, table: urlTable, padded: false).get()
    }

    /// Decodes raw bytes in place as standard, padded Base64.
    package static func decode(_ raw: UnsafeRawBufferPointer) throws(Base64Error) -> [UInt8] {
        try decode(raw, table: standardTable, padded: true).get()
    }

    private static func run<Bytes: Collection<UInt8>>(_ input: Bytes, table: [UInt8], padded: Bool) -> Result<[UInt8], Base64Error> {
        if let fast = input.withContiguousStorageIfAvailable({ decode(UnsafeRawBufferPointer($0), table: table, padded: padded) }) {
            return fast
        }
        return Array(input).withUnsafeBytes { decode($0, table: table, padded: padded) }
    }

    /// Standard, padded Base64.
    package static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        encode(Array(bytes), alphabet: standardAlphabet, pad: true)
    }

    /// Base64URL without padding.
    package static func encodeURL<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        encode(Array(bytes), alphabet: urlAlphabet, pad: false)
    }

    // MARK: - Implementation

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// 0xFF marks a byte outside the alphabet.
    private static let standardTable: [UInt8] = makeTable(standardAlphabet)
    private static let urlTable: [UInt8] = makeTable(urlAlphabet)

    private static func makeTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }

    private static func decode(_ input: UnsafeRawBufferPointer, table: [UInt8], padded: Bool) -> Result<[UInt8], Base64Error> {
        var length = input.count
        if padded {
            guard length % 4 == 0 else { return .failure(.invalidLength(length)) }
            // At most two '=' and only at the very end.
            if length > 0 && input[length - 1] == UInt8(ascii: "=") {
                length -= 1
                if input[length - 1] == UInt8(ascii: "=") { length -= 1 }
            }
        }
        // A lone trailing character would carry only 6 bits: never a whole byte.
        let remainder = length % 4
        guard remainder != 1 else { return .failure(.invalidLength(input.count)) }
        let outputCount = (length / 4) * 3 + (remainder == 0 ? 0 : remainder - 1)
        var failure: Base64Error?
        // Uninitialized: the loop writes every byte (a failure keeps none), so zero-filling
        // kilobytes first would be wasted work.
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
            defer { initialized = failure == nil ? outputCount : 0 }
            table.withUnsafeBufferPointer { table in
                var i = 0
                var o = 0
                let fullEnd = length - remainder
                while i < fullEnd {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = table[Int(input[i + 2])], d = table[Int(input[i + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        failure = .invalidCharacter(offset: firstInvalid(input, from: i, table: table))
                        return
                    }
                    out[o] = a << 2 | b >> 4
                    out[o + 1] = b << 4 | c >> 2
                    out[o + 2] = c << 6 | d
                    i += 4
                    o += 3
                }
                if remainder >= 2 {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = remainder == 3 ? table[Int(input[i + 2])] : 0
                    if (a | b | c) & 0xC0 != 0 {
                        failure = .invalidCharacter(offset: firstInvalid(input, from: i, table: table))
                        return
                    }
                    out[o] = a << 2 | b >> 4
                    if remainder == 3 {
                        out[o + 1] = b << 4 | c >> 2
                        if c & 0x03 != 0 { failure = .nonCanonical; return }
                    } else if b & 0x0F != 0 {
                        failure = .nonCanonical
                        return
                    }
                }
            }
        }
        if let failure { return .failure(failure) }
        return .success(output)
    }

    private static func firstInvalid(_ input: UnsafeRawBufferPointer, from start: Int, table: UnsafeBufferPointer<UInt8>) -> Int {
        var index = start
        while index < input.count && table[Int(input[index])] != 0xFF { index += 1 }
        return index
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if pad { out.append(UInt8(ascii: "=")); out.append(UInt8(ascii: "=")) }
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Why a Base64 / Base64URL string was refused.
package enum Base64Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The length cannot be a valid encoding (not a multiple of 4 when padded, or 4n+1).
    case invalidLength(Int)
    /// A byte outside the alphabet (whitespace, `=` in the middle or in unpadded input, ...).
    case invalidCharacter(offset: Int)
    /// The last character has non-zero unused bits (a non-canonical encoding).
    case nonCanonical

    package var description: String {
        switch self {
        case .invalidLength(let n): "invalid length \(n)"
        case .invalidCharacter(let offset): "invalid character at offset \(offset)"
        case .nonCanonical: "non-canonical encoding (unused trailing bits are not zero)"
        }
    }
}

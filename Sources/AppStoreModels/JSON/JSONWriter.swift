/// A small, allocation-light JSON emitter that appends UTF-8 straight into a byte buffer.
///
/// Commas and colons are inserted automatically: call ``objectStart()``, then alternate
/// ``key(_:)`` and a value, then ``objectEnd()``. The writer does not check that the calls
/// form valid JSON (that would cost a stack); it only guarantees that every string is
/// escaped correctly. Strings are copied in unescaped runs, so typical ASCII identifiers
/// cost one bulk append.
///
/// ```swift
/// var w = JSONWriter()
/// w.objectStart()
/// w.field("type", "DID_RENEW")
/// w.field("expiresDate", Int64(1_700_000_000_000))
/// w.objectEnd()
/// let bytes = w.bytes   // {"type":"DID_RENEW","expiresDate":1700000000000}
/// ```
public struct JSONWriter: Sendable {
    /// The JSON written so far.
    public private(set) var bytes: [UInt8]
    /// True when the next key or array element needs a leading comma.
    private var needsComma = false

    /// Creates a writer, reserving `capacity` bytes up front.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Removes everything written, keeping the buffer's capacity for reuse.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    @inline(__always)
    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    // MARK: Containers

    /// Writes `{`.
    public mutating func objectStart() {
        separator()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// Writes `}`.
    public mutating func objectEnd() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Writes `[`.
    public mutating func arrayStart() {
        separator()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// Writes `]`.
    public mutating func arrayEnd() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes an object key and the colon after it.
    public mutating func key(_ name: String) {
        separator()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Values

    /// Writes an escaped string value.
    public mutating func string(_ value: String) {
        separator()
        appendQuoted(value)
        needsComma = true
    }

    /// Writes an integer value.
    public mutating func int(_ value: Int64) {
        separator()
        appendDecimal(value)
        needsComma = true
    }

    /// Writes an integer value.
    public mutating func int(_ value: Int) {
        int(Int64(value))
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separator()
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])  // true
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])  // false
        }
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separator()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes bytes that are already a complete JSON value (for example a nested document),
    /// without checking them.
    public mutating func raw(_ json: some Sequence<UInt8>) {
        separator()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    // MARK: Fields (key + value); nil values are omitted

    /// Writes `"key":"value"`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    /// Writes `"key":value`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: Int64?) {
        guard let value else { return }
        key(name)
        int(value)
    }

    /// Writes `"key":value`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: Int?) {
        guard let value else { return }
        key(name)
        int(value)
    }

    /// Writes `"key":true|false`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bool(value)
    }

    /// Writes `"key":<milliseconds>`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: AppleTimestamp?) {
        guard let value else { return }
        key(name)
        int(value.millisecondsSince1970)
    }

    /// Writes `"key":["a","b"]`, or nothing when `value` is nil.
    public mutating func field(_ name: String, _ value: [String]?) {
        guard let value else { return }
        key(name)
        arrayStart()
        for element in value { string(element) }
        arrayEnd()
    }

    // MARK: Encoding

    private mutating func appendDecimal(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        // Build digits from the magnitude as UInt64 so Int64.min does not overflow.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, no heap
        var count = 0
        withUnsafeMutableBytes(of: &digits) { scratch in
            while magnitude > 0 {
                scratch[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[(24 - count)...]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                // Only `"`, `\` and C0 controls must be escaped in JSON; everything else
                // (including non-ASCII UTF-8, which a Swift String guarantees is valid) is copied.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                }
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              JSONWriter.hexDigits[Int(byte >> 4)], JSONWriter.hexDigits[Int(byte & 0xF)]])
                }
                runStart = index + 1
            }
            if runStart < utf8.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

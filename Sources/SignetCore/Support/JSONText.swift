/// A small, fast JSON writer for output records (events, dead letters, reports).
///
/// It appends UTF-8 straight into a byte buffer; commas are inserted automatically.
/// Callers are responsible for balanced begin/end calls.
package struct JSONText: Sendable {
    package private(set) var bytes: [UInt8] = []
    private var needsComma = false

    package init(reserving capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    package mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    package mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    package mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    package mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// Writes an object key; the next value call writes its value.
    package mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    package mutating func string(_ value: String) { separate(); appendQuoted(value); needsComma = true }
    package mutating func int(_ value: Int64) { separate(); bytes.append(contentsOf: String(value).utf8); needsComma = true }
    package mutating func bool(_ value: Bool) { separate(); bytes.append(contentsOf: (value ? "true" : "false").utf8); needsComma = true }
    package mutating func null() { separate(); bytes.append(contentsOf: "null".utf8); needsComma = true }

    /// Writes already-serialised JSON (for example a verified payload) as a value.
    package mutating func raw(_ json: some Collection<UInt8>) { separate(); bytes.append(contentsOf: json); needsComma = true }

    /// Convenience: `"key": "value"` when value is non-nil, nothing otherwise.
    package mutating func field(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name); string(value)
    }

    package mutating func field(_ name: String, _ value: Int64?) {
        guard let value else { return }
        key(name); int(value)
    }

    package mutating func field(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name); bool(value)
    }

    package mutating func field(_ name: String, _ value: Int?) {
        guard let value else { return }
        key(name); int(Int64(value))
    }

    /// `"key": ["a", "b"]` when value is non-nil.
    package mutating func field(_ name: String, _ value: [String]?) {
        guard let value else { return }
        key(name); beginArray()
        for element in value { string(element) }
        endArray()
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings (ids, names, dates) need no escaping: copy them in one go.
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard !utf8.contains(where: Self.needsEscape) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied != true { appendEscaped(text) }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private mutating func appendEscaped(_ text: String) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
    }
}

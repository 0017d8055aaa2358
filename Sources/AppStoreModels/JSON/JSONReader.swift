/// A type with a hand-written decoder that reads straight from UTF-8 bytes.
///
/// ``AppStoreJSON/decode(_:from:)`` prefers this path; the same types also stay `Decodable`
/// (with identical keys and semantics) for callers that go through `JSONDecoder`.
protocol JSONFastDecodable {
    init(json reader: inout JSONReader) throws
}

/// String-backed open enum values that the fast decoder can build.
protocol JSONOpenStringValue {
    init(rawValue: String)
}

/// Int-backed open enum values that the fast decoder can build.
protocol JSONOpenIntValue {
    init(rawValue: Int)
}

/// A strict, allocation-light RFC 8259 reader over a contiguous UTF-8 buffer.
///
/// It is a pull parser: model decoders ask for the value type they expect, so nothing is
/// materialised that the model does not keep. Every error is thrown (never trapped): bytes
/// are bounds-checked against `count`, numbers are overflow-checked, strings are UTF-8
/// validated, and nesting is capped at `maxDepth` so hostile input cannot exhaust the stack.
/// Semantics match the models' `Decodable` conformances: unknown keys are skipped (but must
/// still be valid JSON), `null` reads as absent, and a value of the wrong type throws.
/// Unlike `JSONDecoder` (last wins), a key the model reads may appear only once per object:
/// RFC 8259 leaves duplicate names undefined, and a signed payload whose meaning depends on
/// which duplicate a parser keeps is a parser-differential trick (see docs/json.md).
struct JSONReader {
    private let base: UnsafePointer<UInt8>
    private let count: Int
    private(set) var pos: Int = 0
    private var depth: Int = 0
    private let maxDepth: Int
    /// One bit per known key for each of the innermost ``keyMaskLevels`` object levels: which
    /// keys this object has already named. A tuple, not an array, so the hot path never allocates.
    private var keyMasks: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    /// Model objects nest at most five levels deep (Apple's payloads); deeper objects are only
    /// ever skipped, never read through a key table, so eight levels cover every keyed object.
    private static let keyMaskLevels = 8

    /// `buffer` must stay alive and unchanged while the reader is used.
    init(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        // An empty buffer may have no base address; a dangling-but-never-read pointer is fine
        // because every read is guarded by `count`.
        self.base = buffer.baseAddress ?? UnsafePointer(bitPattern: 0x1)!
        self.count = buffer.count
        self.maxDepth = maxDepth
    }

    // MARK: Errors

    @inline(__always)
    private func error(_ kind: AppStoreJSONError.Kind, _ detail: String = "", at offset: Int? = nil) -> AppStoreJSONError {
        AppStoreJSONError(kind, offset: offset ?? pos, detail)
    }

    /// A valid value start of the wrong type is a type mismatch; anything else is a syntax error.
    private func mismatch(_ byte: UInt8, expected: String) -> AppStoreJSONError {
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "t"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return error(.typeMismatch, "expected \(expected)")
        default:
            return error(.unexpectedByte, "expected \(expected)")
        }
    }

    // MARK: Whitespace and structure

    @inline(__always)
    private mutating func skipWhitespace() {
        while pos < count {
            switch base[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    /// The next significant byte, not consumed.
    @inline(__always)
    private mutating func peek() throws -> UInt8 {
        skipWhitespace()
        guard pos < count else { throw error(.unexpectedEnd) }
        return base[pos]
    }

    /// Only whitespace may follow the top-level value.
    mutating func expectEnd() throws {
        skipWhitespace()
        if pos != count { throw error(.trailingData) }
    }

    @inline(__always)
    private mutating func enterContainer() throws {
        depth += 1
        if depth > maxDepth { throw error(.tooDeep, "nesting deeper than \(maxDepth)") }
    }

    /// Consumes `{`.
    mutating func beginObject() throws {
        let byte = try peek()
        guard byte == UInt8(ascii: "{") else { throw mismatch(byte, expected: "an object") }
        pos += 1
        try enterContainer()
        _ = updateKeyMask { $0 = 0 }
    }

    /// Applies `body` to the duplicate-key mask of the current object level; false when the
    /// level is deeper than ``keyMaskLevels`` (not tracked).
    @inline(__always)
    private mutating func updateKeyMask(_ body: (inout UInt64) -> Void) -> Bool {
        let level = depth - 1
        guard level >= 0, level < Self.keyMaskLevels else { return false }
        withUnsafeMutableBytes(of: &keyMasks) { raw in
            let offset = level * MemoryLayout<UInt64>.stride
            var mask = raw.load(fromByteOffset: offset, as: UInt64.self)
            body(&mask)
            raw.storeBytes(of: mask, toByteOffset: offset, as: UInt64.self)
        }
        return true
    }

    /// Records that the current object names the key at `index` of its table; throws if it did before.
    @inline(__always)
    private mutating func noteKey(_ index: Int, name: @autoclosure () -> String, at offset: Int) throws {
        // JSONKeyTable guarantees at most 64 keys; the guard only keeps the shift total.
        guard index < UInt64.bitWidth else { return }
        let bit: UInt64 = 1 << UInt64(index)
        var repeated = false
        _ = updateKeyMask { mask in
            repeated = mask & bit != 0
            mask |= bit
        }
        if repeated { throw error(.duplicateKey, "the object names \"\(name())\" twice", at: offset) }
    }

    /// Advances to the next member's key (returns true, positioned at its opening quote) or
    /// consumes the closing `}` (returns false). `first` must start as true for each object.
    mutating func nextMember(_ first: inout Bool) throws -> Bool {
        var byte = try peek()
        if byte == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            first = false
            return false
        }
        if first {
            first = false
        } else {
            guard byte == UInt8(ascii: ",") else { throw error(.unexpectedByte, "expected ',' or '}'") }
            pos += 1
            byte = try peek()
        }
        guard byte == UInt8(ascii: "\"") else { throw error(.unexpectedByte, "expected a key") }
        return true
    }

    /// Consumes `[`.
    mutating func beginArray() throws {
        let byte = try peek()
        guard byte == UInt8(ascii: "[") else { throw mismatch(byte, expected: "an array") }
        pos += 1
        try enterContainer()
    }

    /// Returns true when another element follows (positioned at it) or consumes `]`.
    mutating func nextElement(_ first: inout Bool) throws -> Bool {
        let byte = try peek()
        if byte == UInt8(ascii: "]") {
            pos += 1
            depth -= 1
            first = false
            return false
        }
        if first {
            first = false
            return true
        }
        guard byte == UInt8(ascii: ",") else { throw error(.unexpectedByte, "expected ',' or ']'") }
        pos += 1
        // A trailing comma is caught by the element reader, which sees `]` instead of a value.
        return true
    }

    @inline(__always)
    private mutating func expectColon() throws {
        guard try peek() == UInt8(ascii: ":") else { throw error(.unexpectedByte, "expected ':'") }
        pos += 1
    }

    /// Reads a member key (positioned at its quote by ``nextMember(_:)``) and the colon after it.
    /// Returns nil for keys the table does not know; the caller then skips the value.
    mutating func readKey<Key>(_ table: JSONKeyTable<Key>) throws -> Key? {
        let start = pos + 1
        var index = start
        var high: UInt8 = 0
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(start: base + start, count: index - start)
                if high >= 0x80, !JSONReader.isValidUTF8(raw) {
                    throw error(.invalidString, "key is not valid UTF-8", at: start)
                }
                pos = index + 1
                try expectColon()
                guard let found = table.lookup(raw) else { return nil }
                try noteKey(found.index, name: found.key.rawValue, at: start - 1)
                return found.key
            }
            if byte == UInt8(ascii: "\\") {
                let bytes = try readEscapedString()
                try expectColon()
                guard let found = bytes.withUnsafeBufferPointer({ table.lookup($0) }) else { return nil }
                try noteKey(found.index, name: found.key.rawValue, at: start - 1)
                return found.key
            }
            if byte < 0x20 { throw error(.invalidString, "control character in key", at: index) }
            high |= byte
            index += 1
        }
        throw error(.unexpectedEnd, at: count)
    }

    // MARK: Literals

    @inline(__always)
    private mutating func literal(_ text: StaticString) throws {
        let length = text.utf8CodeUnitCount
        guard pos + length <= count else { throw error(.unexpectedEnd, at: count) }
        let expected = text.utf8Start
        for offset in 0..<length where base[pos + offset] != expected[offset] {
            throw error(.unexpectedByte, "invalid literal", at: pos + offset)
        }
        pos += length
    }

    /// Consumes `null` if it is next.
    @inline(__always)
    mutating func readNull() throws -> Bool {
        if try peek() == UInt8(ascii: "n") {
            try literal("null")
            return true
        }
        return false
    }

    // MARK: Strings

    /// The index of the first byte at or after `start` that ends a plain run of string bytes:
    /// `"`, `\\`, a control character or a non-ASCII byte (or `count`). Checks eight bytes per
    /// step (SWAR), which matters for the multi-kilobyte JWS strings nested in notifications.
    @inline(__always)
    private func plainRunEnd(from start: Int) -> Int {
        var index = start
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            // Classic "has a zero byte" / "has a byte below n" tests: exact as yes/no, so the
            // byte loop below only has to locate the special byte within this word.
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word) | word
            if special & high != 0 { break }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return index }
            index += 1
        }
        return index
    }

    /// Reads a string or `null`.
    mutating func string() throws -> String? {
        let byte = try peek()
        if byte == UInt8(ascii: "n") {
            try literal("null")
            return nil
        }
        guard byte == UInt8(ascii: "\"") else { throw mismatch(byte, expected: "a string") }
        let start = pos + 1
        var index = start
        var high: UInt8 = 0
        while true {
            index = plainRunEnd(from: index)
            guard index < count else { throw error(.unexpectedEnd, at: count) }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(start: base + start, count: index - start)
                if high >= 0x80, !JSONReader.isValidUTF8(raw) {
                    throw error(.invalidString, "string is not valid UTF-8", at: start)
                }
                pos = index + 1
                return String(decoding: raw, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                let bytes = try readEscapedString()
                return String(decoding: bytes, as: UTF8.self)
            }
            if byte < 0x20 { throw error(.invalidString, "control character in string", at: index) }
            high = byte
            index += 1
        }
    }

    /// Decodes a string with escapes from its opening quote at `pos`; returns validated UTF-8.
    private mutating func readEscapedString() throws -> [UInt8] {
        let start = pos
        var out: [UInt8] = []
        out.reserveCapacity(64)
        var index = pos + 1
        while index < count {
            let byte = base[index]
            switch byte {
            case UInt8(ascii: "\""):
                pos = index + 1
                guard out.withUnsafeBufferPointer(JSONReader.isValidUTF8) else {
                    throw error(.invalidString, "string is not valid UTF-8", at: start)
                }
                return out
            case UInt8(ascii: "\\"):
                guard index + 1 < count else { throw error(.unexpectedEnd, at: count) }
                let escape = base[index + 1]
                index += 2
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4(at: index)
                    index += 4
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard index + 6 <= count, base[index] == UInt8(ascii: "\\"), base[index + 1] == UInt8(ascii: "u") else {
                            throw error(.invalidString, "unpaired surrogate", at: index)
                        }
                        let low = try hex4(at: index + 2)
                        guard (0xDC00...0xDFFF).contains(low) else { throw error(.invalidString, "unpaired surrogate", at: index) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error(.invalidString, "unpaired surrogate", at: index)
                    }
                    JSONReader.appendUTF8(scalar, to: &out)
                default:
                    throw error(.invalidString, "invalid escape", at: index - 1)
                }
            default:
                if byte < 0x20 { throw error(.invalidString, "control character in string", at: index) }
                out.append(byte)
                index += 1
            }
        }
        throw error(.unexpectedEnd, at: count)
    }

    private func hex4(at offset: Int) throws -> UInt32 {
        guard offset + 4 <= count else { throw error(.unexpectedEnd, at: count) }
        var value: UInt32 = 0
        for i in offset..<(offset + 4) {
            let byte = base[i]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(.invalidString, "invalid \\u escape", at: i)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Strict UTF-8 check (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            let b0 = bytes[i]
            if b0 < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
            switch b0 {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F
            default: return false
            }
            guard i + length <= n else { return false }
            let b1 = bytes[i + 1]
            guard b1 >= lower, b1 <= upper else { return false }
            for k in 2..<max(length, 2) where bytes[i + k] & 0xC0 != 0x80 {
                return false
            }
            i += length
        }
        return true
    }

    // MARK: Numbers

    /// Scans one number per the JSON grammar; returns its byte range and whether it is an integer.
    private mutating func scanNumber() throws -> (start: Int, end: Int, integer: Bool) {
        let start = pos
        var index = pos
        var integer = true
        @inline(__always) func isDigit(_ i: Int) -> Bool {
            i < count && base[i] >= UInt8(ascii: "0") && base[i] <= UInt8(ascii: "9")
        }
        if index < count, base[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count else { throw error(.unexpectedEnd, at: count) }
        if base[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(index) {
            while isDigit(index) { index += 1 }
        } else {
            throw error(.invalidNumber, at: index)
        }
        if index < count, base[index] == UInt8(ascii: ".") {
            integer = false
            index += 1
            let digits = index
            while isDigit(index) { index += 1 }
            guard index > digits else { throw error(.invalidNumber, "digits expected after '.'", at: index) }
        }
        if index < count, base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E") {
            integer = false
            index += 1
            if index < count, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            let digits = index
            while isDigit(index) { index += 1 }
            guard index > digits else { throw error(.invalidNumber, "digits expected in exponent", at: index) }
        }
        pos = index
        return (start, index, integer)
    }

    private func parseInteger(_ start: Int, _ end: Int) throws -> Int64 {
        var index = start
        let negative = base[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var value: Int64 = 0
        while index < end {
            let digit = Int64(base[index] &- UInt8(ascii: "0"))
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if o1 || o2 { throw error(.numberOutOfRange, "integer does not fit in 64 bits", at: start) }
            value = next
            index += 1
        }
        return value
    }

    @inline(__always)
    private mutating func numberStart(expected: String) throws -> Bool {
        let byte = try peek()
        if byte == UInt8(ascii: "n") {
            try literal("null")
            return false
        }
        guard byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) else {
            throw mismatch(byte, expected: expected)
        }
        return true
    }

    /// Reads an integer or `null`. Fractions and exponents are rejected: Apple sends integers.
    mutating func int64() throws -> Int64? {
        guard try numberStart(expected: "an integer") else { return nil }
        let number = try scanNumber()
        guard number.integer else { throw error(.numberOutOfRange, "expected an integer", at: number.start) }
        return try parseInteger(number.start, number.end)
    }

    /// Reads an integer or `null` as `Int`.
    @inline(__always)
    mutating func int() throws -> Int? {
        guard let value = try int64() else { return nil }
        guard let result = Int(exactly: value) else { throw error(.numberOutOfRange) }
        return result
    }

    /// Reads milliseconds since 1970 or `null`; a fractional value (Xcode) is truncated toward zero.
    mutating func timestamp() throws -> AppleTimestamp? {
        guard try numberStart(expected: "a timestamp") else { return nil }
        let number = try scanNumber()
        if number.integer {
            return AppleTimestamp(millisecondsSince1970: try parseInteger(number.start, number.end))
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + number.start, count: number.end - number.start), as: UTF8.self)
        guard let value = Double(text), let milliseconds = AppleTimestamp.truncating(value) else {
            throw error(.numberOutOfRange, "timestamp out of range", at: number.start)
        }
        return milliseconds
    }

    // MARK: Booleans

    /// Reads `true`, `false` or `null`.
    mutating func bool() throws -> Bool? {
        switch try peek() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        case UInt8(ascii: "n"): try literal("null"); return nil
        case let byte: throw mismatch(byte, expected: "a boolean")
        }
    }

    // MARK: Composite helpers

    /// Reads a nested model or `null`.
    @inline(__always)
    mutating func object<T: JSONFastDecodable>(_ type: T.Type) throws -> T? {
        if try readNull() { return nil }
        return try T(json: &self)
    }

    @inline(__always)
    mutating func stringValue<T: JSONOpenStringValue>(_ type: T.Type) throws -> T? {
        guard let raw = try string() else { return nil }
        return T(rawValue: raw)
    }

    @inline(__always)
    mutating func intValue<T: JSONOpenIntValue>(_ type: T.Type) throws -> T? {
        guard let raw = try int() else { return nil }
        return T(rawValue: raw)
    }

    /// Reads an array of strings or `null`; a `null` element is a type mismatch.
    mutating func stringArray() throws -> [String]? {
        if try readNull() { return nil }
        try beginArray()
        var result: [String] = []
        var first = true
        while try nextElement(&first) {
            guard let element = try string() else { throw error(.typeMismatch, "null element in string array") }
            result.append(element)
        }
        return result
    }

    /// Reads an array of nested models or `null`; a `null` element is a type mismatch.
    mutating func objectArray<T: JSONFastDecodable>(_ type: T.Type) throws -> [T]? {
        if try readNull() { return nil }
        try beginArray()
        var result: [T] = []
        var first = true
        while try nextElement(&first) {
            guard let element = try object(T.self) else { throw error(.typeMismatch, "null element in object array") }
            result.append(element)
        }
        return result
    }

    // MARK: Any value

    /// Rejects text that is not UTF-8 with a reason a person can act on. The grammar alone
    /// rejects it too, but as "unexpected byte at 0", which hides that the encoding is wrong.
    func checkEncoding() throws {
        let b0: Int = count > 0 ? Int(base[0]) : -1
        let b1: Int = count > 1 ? Int(base[1]) : -1
        let b2: Int = count > 2 ? Int(base[2]) : -1
        if b0 == 0xEF, b1 == 0xBB, b2 == 0xBF {
            throw error(.encoding, "a UTF-8 byte-order mark; JSON text must not start with one (RFC 8259 §8.1)", at: 0)
        }
        if (b0 == 0xFE && b1 == 0xFF) || (b0 == 0xFF && b1 == 0xFE) {
            throw error(.encoding, "a UTF-16 byte-order mark; JSON text must be UTF-8 (RFC 8259 §8.1)", at: 0)
        }
        // Valid JSON holds no NUL byte outside a string and none raw inside one, so a NUL among
        // the first two bytes is UTF-16 or UTF-32 text.
        if b0 == 0 || b1 == 0 {
            throw error(.encoding, "UTF-16 or UTF-32 text; JSON text must be UTF-8 (RFC 8259 §8.1)", at: b0 == 0 ? 0 : 1)
        }
    }

    /// Reads any JSON value into a ``JSONElement``, validating it completely.
    mutating func value(rejectingDuplicateKeys: Bool) throws -> JSONElement {
        let byte = try peek()
        switch byte {
        case UInt8(ascii: "{"):
            try beginObject()
            var members: [JSONElement.Member] = []
            // Only built when duplicates matter; a set keeps hostile wide objects linear.
            var seen = Set<String>()
            var first = true
            while try nextMember(&first) {
                let keyOffset = pos
                guard let key = try string() else { throw error(.unexpectedByte, "expected a key") }
                try expectColon()
                if rejectingDuplicateKeys, !seen.insert(key).inserted {
                    throw error(.duplicateKey, "the object names \"\(key)\" twice", at: keyOffset)
                }
                members.append(JSONElement.Member(key: key, value: try value(rejectingDuplicateKeys: rejectingDuplicateKeys)))
            }
            return .object(members)
        case UInt8(ascii: "["):
            try beginArray()
            var elements: [JSONElement] = []
            var first = true
            while try nextElement(&first) {
                elements.append(try value(rejectingDuplicateKeys: rejectingDuplicateKeys))
            }
            return .array(elements)
        case UInt8(ascii: "\""):
            guard let text = try string() else { throw error(.unexpectedByte, "expected a string") }
            return .string(text)
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            guard let flag = try bool() else { throw error(.unexpectedByte, "expected a boolean") }
            return .bool(flag)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try scanNumber()
            let text = UnsafeBufferPointer(start: base + number.start, count: number.end - number.start)
            return .number(String(decoding: text, as: UTF8.self))
        default:
            throw error(.unexpectedByte, "expected a value")
        }
    }

    // MARK: Skipping

    /// Skips (and validates) any value: used for keys the model does not know.
    mutating func skipValue() throws {
        let byte = try peek()
        switch byte {
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "{"):
            pos += 1
            try enterContainer()
            var first = true
            while try nextMember(&first) {
                try skipString()
                try expectColon()
                try skipValue()
            }
        case UInt8(ascii: "["):
            pos += 1
            try enterContainer()
            var first = true
            while try nextElement(&first) {
                try skipValue()
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber()
        default: throw error(.unexpectedByte, "expected a value")
        }
    }

    private mutating func skipString() throws {
        let start = pos + 1
        var index = start
        var high: UInt8 = 0
        while true {
            index = plainRunEnd(from: index)
            guard index < count else { throw error(.unexpectedEnd, at: count) }
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                if high >= 0x80, !JSONReader.isValidUTF8(UnsafeBufferPointer(start: base + start, count: index - start)) {
                    throw error(.invalidString, "string is not valid UTF-8", at: start)
                }
                pos = index + 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                _ = try readEscapedString()
                return
            }
            if byte < 0x20 { throw error(.invalidString, "control character in string", at: index) }
            high = byte
            index += 1
        }
    }
}

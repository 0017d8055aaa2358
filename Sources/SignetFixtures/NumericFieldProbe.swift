/// Lists the field paths of a `Decodable` model and which of them hold JSON numbers, by
/// running the model's own `init(from:)` against a recording decoder.
///
/// Why: the extreme-number corpus must cover every numeric field, including fields added
/// later. Deriving the list from the model's decoding code (rather than a hand-kept list)
/// makes a new `Int64` or `AppleTimestamp` field part of the corpus automatically.
///
/// Paths are dot-separated keys; `[]` stands for "an element of this array", e.g.
/// `advancedCommerceInfo.items[].price`. Every optional field is visited (the recorder
/// answers "absent" after noting the field), so one pass sees the whole model.
public enum NumericFieldProbe {
    /// What a field holds, as the model decodes it.
    public enum Kind: String, Sendable, Hashable {
        case number, string, bool, object
    }

    /// Every leaf field path of `type` and its kind (objects are listed too, so their
    /// children's parents are known).
    public static func fields<T: Decodable>(of type: T.Type) -> [String: Kind] {
        let recorder = ProbeRecorder()
        // The recorder answers every optional with nil, so only a non-optional field of a
        // closed type could throw here; whatever was recorded up to then is still returned.
        _ = try? T(from: ProbeDecoder(recorder: recorder, path: []))
        return recorder.fields
    }

    /// The paths of `type` that hold JSON numbers, sorted.
    public static func numericPaths<T: Decodable>(of type: T.Type) -> [String] {
        fields(of: type).filter { $0.value == .number }.map(\.key).sorted()
    }

    /// Joins path components: keys with dots, array elements as `[]`.
    static func join(_ path: [String]) -> String {
        var out = ""
        for component in path {
            if component == "[]" {
                out += "[]"
            } else {
                out += out.isEmpty ? component : "." + component
            }
        }
        return out
    }
}

/// Collects the fields a probe visits. Used from one synchronous decode only.
private final class ProbeRecorder {
    var fields: [String: NumericFieldProbe.Kind] = [:]

    func note(_ path: [String], _ kind: NumericFieldProbe.Kind) {
        let key = NumericFieldProbe.join(path)
        // A single-value type (AppleTimestamp, an open Int enum) first reports its field as
        // an object, then the number inside: the leaf kind wins.
        if fields[key] == nil || kind != .object { fields[key] = kind }
    }

    /// Visits one value at `path`: a primitive is noted, anything else is probed through its
    /// own `init(from:)`.
    func visit<T: Decodable>(_ type: T.Type, at path: [String]) throws -> T {
        // A primitive is noted and answered with a placeholder (the probe never keeps it).
        let primitive: (NumericFieldProbe.Kind, Any)? =
            switch type {
            case is Bool.Type: (.bool, false)
            case is String.Type: (.string, "")
            case let numeric as any AdditiveArithmetic.Type: (.number, numeric.zero)
            default: nil
            }
        if let (kind, placeholder) = primitive, let value = placeholder as? T {
            note(path, kind)
            return value
        }
        note(path, .object)
        return try T(from: ProbeDecoder(recorder: self, path: path))
    }
}

private struct ProbeFailure: Error {}

private struct ProbeDecoder: Decoder {
    let recorder: ProbeRecorder
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeKeyedContainer<Key>(recorder: recorder, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyedContainer(recorder: recorder, path: path + ["[]"])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ProbeSingleValueContainer(recorder: recorder, path: path)
    }
}

private struct ProbeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recorder: ProbeRecorder
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try recorder.visit(type, at: path + [key.stringValue])
    }

    /// Notes the field, then answers "absent" so the model's decode goes on to its next field.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        _ = try? recorder.visit(type, at: path + [key.stringValue])
        return nil
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try recorder.visit(type, at: path + [key.stringValue]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try recorder.visit(type, at: path + [key.stringValue]) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { absent(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { absent(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { absent(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { absent(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { absent(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { absent(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { absent(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { absent(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { absent(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { absent(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { absent(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { absent(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { absent(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { absent(type, key) }

    private func absent<T: Decodable>(_ type: T.Type, _ key: Key) -> T? {
        _ = try? recorder.visit(type, at: path + [key.stringValue])
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        KeyedDecodingContainer(ProbeKeyedContainer<NestedKey>(recorder: recorder, path: path + [key.stringValue]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyedContainer(recorder: recorder, path: path + [key.stringValue, "[]"])
    }

    func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: recorder, path: path) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(recorder: recorder, path: path + [key.stringValue]) }
}

/// An array of exactly one element, so the element type is probed once.
private struct ProbeUnkeyedContainer: UnkeyedDecodingContainer {
    let recorder: ProbeRecorder
    let path: [String]
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= 1 }

    init(recorder: ProbeRecorder, path: [String]) {
        self.recorder = recorder
        self.path = path
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try element(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try element(type) }
    mutating func decode(_ type: String.Type) throws -> String { try element(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try element(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try element(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try element(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try element(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try element(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try element(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try element(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try element(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try element(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try element(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try element(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try element(type) }

    private mutating func element<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw ProbeFailure() }
        currentIndex += 1
        return try recorder.visit(type, at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return KeyedDecodingContainer(ProbeKeyedContainer<NestedKey>(recorder: recorder, path: path))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return ProbeUnkeyedContainer(recorder: recorder, path: path + ["[]"])
    }

    mutating func superDecoder() throws -> any Decoder {
        currentIndex += 1
        return ProbeDecoder(recorder: recorder, path: path)
    }
}

private struct ProbeSingleValueContainer: SingleValueDecodingContainer {
    let recorder: ProbeRecorder
    let path: [String]
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try recorder.visit(type, at: path) }
    func decode(_ type: Bool.Type) throws -> Bool { try recorder.visit(type, at: path) }
    func decode(_ type: String.Type) throws -> String { try recorder.visit(type, at: path) }
    func decode(_ type: Double.Type) throws -> Double { try recorder.visit(type, at: path) }
    func decode(_ type: Float.Type) throws -> Float { try recorder.visit(type, at: path) }
    func decode(_ type: Int.Type) throws -> Int { try recorder.visit(type, at: path) }
    func decode(_ type: Int8.Type) throws -> Int8 { try recorder.visit(type, at: path) }
    func decode(_ type: Int16.Type) throws -> Int16 { try recorder.visit(type, at: path) }
    func decode(_ type: Int32.Type) throws -> Int32 { try recorder.visit(type, at: path) }
    func decode(_ type: Int64.Type) throws -> Int64 { try recorder.visit(type, at: path) }
    func decode(_ type: UInt.Type) throws -> UInt { try recorder.visit(type, at: path) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try recorder.visit(type, at: path) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try recorder.visit(type, at: path) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try recorder.visit(type, at: path) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try recorder.visit(type, at: path) }
}

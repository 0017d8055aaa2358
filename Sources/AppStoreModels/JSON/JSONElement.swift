/// Any JSON value, read by Signet's strict RFC 8259 reader (SignetCore's `JSONValue` is the
/// other direction: documents built in code and printed).
///
/// For JSON that has no model of its own: the unsigned envelope line and the JWS protected
/// header. ``parse(_:duplicateKeys:)`` accepts exactly RFC 8259 JSON text and nothing more:
/// UTF-8 only (no byte-order mark, no UTF-16/32), no trailing commas, no comments, no raw
/// control characters in strings, no `NaN`/`Infinity`, no leading zeros, `+` or bare `.5`,
/// nothing after the value but whitespace, nesting at most ``AppStoreJSON/maximumDepth``.
/// docs/json.md lists what it does with the cases RFC 8259 leaves to implementations.
package enum JSONElement: Hashable, Sendable {
    /// Members in document order (duplicates kept only under ``DuplicateKeys/allow``).
    case object([Member])
    case array([JSONElement])
    case string(String)
    /// The number's literal text, exactly as written: it is valid JSON number syntax, but
    /// may be too large for any machine type, so conversion is left to the caller.
    case number(String)
    case bool(Bool)
    case null

    /// One `"name": value` pair of an object.
    package struct Member: Hashable, Sendable {
        package let key: String
        package let value: JSONElement

        package init(key: String, value: JSONElement) {
            self.key = key
            self.value = value
        }
    }

    /// What to do when an object names the same member twice. RFC 8259 §4 only says names
    /// SHOULD be unique; RFC 7515 §4 lets a JWS reader reject duplicates.
    package enum DuplicateKeys: Sendable {
        /// Throw ``AppStoreJSONError/Kind/duplicateKey``: two parsers must never disagree on
        /// which duplicate counts. Signet uses this for every untrusted input.
        case reject
        /// Keep every member in order (conformance testing, diagnostics).
        case allow
    }

    /// Parses one JSON text (any value at top level). Throws ``AppStoreJSONError`` with the
    /// byte offset and what was expected.
    package static func parse(_ bytes: some Collection<UInt8>, duplicateKeys: DuplicateKeys = .reject) throws -> JSONElement {
        if let value = try bytes.withContiguousStorageIfAvailable({ try parse(buffer: $0, duplicateKeys: duplicateKeys) }) {
            return value
        }
        return try Array(bytes).withUnsafeBufferPointer { try parse(buffer: $0, duplicateKeys: duplicateKeys) }
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>, duplicateKeys: DuplicateKeys) throws -> JSONElement {
        var reader = JSONReader(buffer, maxDepth: AppStoreJSON.maximumDepth)
        try reader.checkEncoding()
        let value = try reader.value(rejectingDuplicateKeys: duplicateKeys == .reject)
        try reader.expectEnd()
        return value
    }

    /// The value of the first member named `key`, or nil when this is not an object or has no
    /// such member.
    package subscript(key: String) -> JSONElement? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The text of a string value; nil for any other value.
    package var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The elements of an array value; nil for any other value.
    package var arrayValue: [JSONElement]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Whether this is an object.
    package var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}

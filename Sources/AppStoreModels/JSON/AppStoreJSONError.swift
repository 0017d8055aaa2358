/// Why a payload could not be decoded.
///
/// Every malformed input (bad syntax, wrong value type, invalid UTF-8, out-of-range
/// numbers, nesting deeper than ``AppStoreJSON/maximumDepth``) ends here; decoding never traps.
public struct AppStoreJSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The class of failure.
    public enum Kind: String, Hashable, Sendable {
        /// The input ended inside a value.
        case unexpectedEnd
        /// A byte that cannot start or continue the expected JSON syntax.
        case unexpectedByte
        /// A string is not valid UTF-8, holds a raw control character or a bad `\u` escape.
        case invalidString
        /// A number does not follow the JSON grammar.
        case invalidNumber
        /// A number does not fit the field (too large, or fractional where an integer is required).
        case numberOutOfRange
        /// A valid JSON value of the wrong type for the field (for example a string where a number belongs).
        case typeMismatch
        /// Objects and arrays are nested deeper than ``AppStoreJSON/maximumDepth``.
        case tooDeep
        /// Non-whitespace bytes follow the top-level value.
        case trailingData
        /// The text is not UTF-8 (RFC 8259 §8.1): a byte-order mark, or UTF-16/UTF-32 input.
        case encoding
        /// An object names the same member twice where Signet requires unique names (see docs/json.md).
        case duplicateKey
        /// Foundation's `JSONDecoder` rejected the input (types without a fast decoder).
        case foundation
    }

    /// The class of failure.
    public let kind: Kind
    /// Byte offset in the input where the failure was detected.
    public let offset: Int
    /// A short human-readable detail.
    public let detail: String

    /// Creates an error.
    public init(_ kind: Kind, offset: Int, _ detail: String = "") {
        self.kind = kind
        self.offset = offset
        self.detail = detail
    }

    public var description: String {
        detail.isEmpty ? "\(kind.rawValue) at byte \(offset)" : "\(kind.rawValue) at byte \(offset): \(detail)"
    }
}

public import Foundation

/// The UUID an app associates with its customer's account (Apple's `appAccountToken`).
///
/// Apple types the field as a UUID, and a UUID has many spellings: Apple signs it in lower
/// case, a backend in Swift writes `uuidString` (upper case). Compared as text, the same
/// customer is two customers, so a consent recorded in one spelling never meets a refund
/// question in the other. Every boundary (the consent ledger, the entitlement API, the CLI,
/// the state store's lookups, events) parses the text into this type, and everything Signet
/// stores or prints uses ``description``: the canonical lower-case form.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/appaccounttoken>
public struct AppAccountToken: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The token's value.
    public let uuid: UUID

    /// A token holding `uuid`.
    public init(_ uuid: UUID) {
        self.uuid = uuid
    }

    /// The token spelled by `text` (36 characters, hyphens 8-4-4-4-12, hexadecimal digits in
    /// either case); nil for anything else.
    public init?(_ text: some StringProtocol) {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: String(text)) else { return nil }
        self.uuid = uuid
    }

    /// The token spelled by `text`, or an error that says what is wrong, for a boundary that
    /// must refuse a non-UUID (`field` names the input in the message).
    public init(parsing text: some StringProtocol, field: String = "appAccountToken") throws(Invalid) {
        guard let token = Self(text) else { throw Invalid(field: field, text: String(text)) }
        self = token
    }

    /// The canonical form: lower-case, hyphenated (as Apple signs it).
    public var description: String { uuid.uuidString.lowercased() }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.description < rhs.description }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: Invalid(field: "appAccountToken", text: text).description))
        }
        self = token
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// Text that is not a UUID where an `appAccountToken` was expected.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        /// The input that carried it (`appAccountToken`, `--app-account-token`).
        public let field: String
        /// What was given.
        public let text: String

        public init(field: String, text: String) {
            self.field = field
            self.text = text
        }

        public var description: String {
            let shown = text.count > 60 ? String(text.prefix(60)) + "..." : text
            return "\(field) must be a UUID (as Apple types it, e.g. 7e3fb20b-4cdb-47cc-936d-99d65f608138, in either case), not \"\(shown)\""
        }
    }
}

extension JWSTransactionDecodedPayload {
    /// ``appAccountToken`` parsed (nil when absent or not a UUID, which Apple never signs).
    public var parsedAppAccountToken: AppAccountToken? { appAccountToken.flatMap { AppAccountToken($0) } }
}

extension JWSRenewalInfoDecodedPayload {
    /// ``appAccountToken`` parsed (nil when absent or not a UUID, which Apple never signs).
    public var parsedAppAccountToken: AppAccountToken? { appAccountToken.flatMap { AppAccountToken($0) } }
}

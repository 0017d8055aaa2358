import Foundation

/// The JSON that `signet entitlements`, `signet state show` and the admin listener's
/// `/v1/...` API answer with: one encoder setting, so the CLI and the API never differ.
public enum StateJSON {
    /// Pretty-printed, keys sorted, slashes unescaped.
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// The entitlements of one account or one purchase, evaluated at `instant` (ms since 1970).
    public enum Query: Sendable, Equatable {
        case appAccountToken(String)
        case originalTransactionId(String)
    }

    /// Answers `query` from `store` as of `instant`, as JSON.
    public static func entitlements(_ query: Query, in store: any StateStore, at instant: Int64) throws -> [UInt8] {
        switch query {
        case .appAccountToken(let token):
            try encode(store.entitlements(appAccountToken: token, at: instant))
        case .originalTransactionId(let id):
            try encode(store.entitlements(originalTransactionId: id, at: instant))
        }
    }

    /// The stored snapshot of one purchase as JSON, or nil when none is stored.
    public static func subscription(_ originalTransactionId: String, in store: any StateStore) throws -> [UInt8]? {
        guard let snapshot = try store.subscription(originalTransactionId: originalTransactionId) else { return nil }
        return try encode(snapshot)
    }
}

package import AppStoreModels
import Foundation

/// The JSON that `signet entitlements`, `signet state show` and the admin listener's
/// `/v1/...` API answer with: one encoder and one `asOf` stamp, so the CLI and the API
/// never differ.
package enum StateJSON {
    /// What an entitlement answer's `asOf.meaning` says.
    package static let entitlementsMeaning = "evaluated at this instant from the stored snapshot"
    /// What a stored snapshot's `asOf.meaning` says.
    package static let snapshotMeaning =
        "stored snapshot: the state when the last notification was applied; `signet entitlements` answers for now"

    /// Pretty-printed, keys sorted, slashes unescaped.
    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// As ``encode(_:)``, with `asOf: {at, meaning}` added to the object (or to each object of
    /// an array): the instant the answer holds for, so a stored snapshot and an answer for now
    /// never look contradictory.
    package static func encode<Value: Encodable>(_ value: Value, asOf instant: Int64, meaning: String) throws -> [UInt8] {
        try encode(Extended(value, "asOf", AsOf(at: instant, meaning: meaning)))
    }

    /// The same for each element of an array.
    package static func encode<Value: Encodable>(_ values: [Value], asOf instant: Int64, meaning: String) throws -> [UInt8] {
        let asOf = AsOf(at: instant, meaning: meaning)
        return try encode(values.map { Extended($0, "asOf", asOf) })
    }

    private struct AsOf: Encodable {
        let at: Int64
        let meaning: String
    }

    /// A value's JSON object with one more key. Encoded in one pass by `JSONEncoder` rather than
    /// re-serialized through `JSONSerialization`, whose sorted keys compare through ICU: 200 µs
    /// an entitlement answer against 10, the API's hot path (`scripts/bench_scale.py`).
    package struct Extended<Value: Encodable, Extra: Encodable>: Encodable {
        let value: Value
        let key: String
        let extra: Extra

        package init(_ value: Value, _ key: String, _ extra: Extra) {
            self.value = value
            self.key = key
            self.extra = extra
        }

        package func encode(to encoder: any Encoder) throws {
            try value.encode(to: encoder)
            // A second keyed container on the same encoder adds to the object the value wrote.
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(extra, forKey: Key(stringValue: key))
        }

        private struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    /// The entitlements of one account or one purchase, evaluated at `instant` (ms since 1970).
    package enum Query: Sendable, Equatable {
        case appAccountToken(AppAccountToken)
        case originalTransactionId(String)
    }

    /// Answers `query` from `store` as of `instant`, as JSON; with `name`, only the purchases
    /// that grant that entitlement name (``EntitlementNames``): "has this user pro?" is
    /// whether any of them says `entitled`; with `environment`, only that environment's
    /// purchases (a store that keeps Production and Sandbox ones).
    package static func entitlements(
        _ query: Query, named name: String? = nil, environment: String? = nil, in store: any SubscriptionStore & ConsumptionStore,
        at instant: Int64
    ) throws -> [UInt8] {
        // One read per answer where the store joins purchase and consent (subscriptionWithConsent).
        let purchases: [(SubscriptionSnapshot, ConsentRestriction?)] = switch query {
        case .appAccountToken(let token): try store.subscriptionsWithConsent(appAccountToken: token)
        case .originalTransactionId(let id): try store.subscriptionWithConsent(originalTransactionId: id).map { [$0] } ?? []
        }
        let names = store.entitlementNames, policy = TransitionPolicy()
        var answers = purchases.map { Entitlement($0, restriction: $1, at: instant, policy: policy, names: names) }
        if let name { answers.removeAll { !$0.entitlements.contains(name) } }
        if let environment { answers.removeAll { $0.environment != environment } }
        return try encode(answers, asOf: instant, meaning: entitlementsMeaning)
    }

    /// The stored snapshot of one purchase as JSON, or nil when none is stored.
    package static func subscription(_ originalTransactionId: String, in store: any SubscriptionStore) throws -> [UInt8]? {
        guard let snapshot = try store.subscription(originalTransactionId: originalTransactionId) else { return nil }
        return try encode(snapshot, asOf: snapshot.evaluatedAt, meaning: snapshotMeaning)
    }

    /// The consent restriction of one app transaction as JSON (`appTransactionId`, `restricted`,
    /// `rescindedAt`, `notificationUUID`, `clearedAt`, `clearedBy`, ...), nil when none was ever
    /// recorded. With `clearingBy`, clears it first (`StateStore/clearConsentRestriction(appTransactionId:by:at:)`).
    package static func consent(
        _ appTransactionId: String, clearingBy who: String? = nil, in store: any StoreRoles, at instant: Int64
    ) throws -> [UInt8]? {
        let restriction = if let who {
            try store.clearConsentRestriction(appTransactionId: appTransactionId, by: who, at: instant)
        } else {
            try store.consentRestriction(appTransactionId: appTransactionId)
        }
        guard let restriction else { return nil }
        return try encode(Extended(restriction, "restricted", restriction.isInForce))
    }

    /// Most events `history` returns unless told otherwise.
    package static let defaultHistoryLimit = 100

    /// The kept events of one purchase, oldest first (the newest `limit`), as JSON:
    /// `{"originalTransactionId", "events": [{"sequence", "createdAt", "deliveredAt", "event"}]}`
    /// with each event exactly as published, and the purchases a migration links it to
    /// (`previousOriginalTransactionId`, `migratedToOriginalTransactionId`) when there are any; nil when the store knows neither the purchase nor
    /// any event of it.
    package static func history(_ originalTransactionId: String, limit: Int = defaultHistoryLimit, in store: any EventOutboxStore & SubscriptionStore) throws -> [UInt8]? {
        try history(originalTransactionId, events: try store.eventHistory(originalTransactionId: originalTransactionId, limit: limit), in: store)
    }

    /// The same for events already read from `store`, for a caller that also looks at them.
    package static func history(_ originalTransactionId: String, events entries: [EventHistoryEntry], in store: any SubscriptionStore) throws -> [UInt8]? {
        let snapshot = try store.subscription(originalTransactionId: originalTransactionId)
        if entries.isEmpty, snapshot == nil { return nil }
        let events: [[String: Any]] = try entries.map { entry in
            [
                "sequence": entry.sequence, "createdAt": entry.createdAt,
                "deliveredAt": entry.deliveredAt.map { $0 as Any } ?? NSNull(),
                "event": try JSONSerialization.jsonObject(with: Data(entry.payload)),
            ]
        }
        var answer: [String: Any] = ["originalTransactionId": originalTransactionId, "events": events]
        // A migration links two purchases: the history of either names the other.
        if let previous = snapshot?.previousOriginalTransactionId { answer["previousOriginalTransactionId"] = previous }
        if let next = snapshot?.migratedToOriginalTransactionId { answer["migratedToOriginalTransactionId"] = next }
        return Array(try JSONSerialization.data(withJSONObject: answer, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
    }
}

import Foundation
import AppStoreModels

/// The event's JSON document (`Schemas/entitlement-event.schema.json`), read and written
/// with Foundation's coders: every field present, null when unknown, as ``EntitlementEvent/json``.
extension EntitlementEvent: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case schemaVersion, eventId, type, entitled, entitlements, previousState, state, originalTransactionId
        case transactionId, productId, productType, subscriptionGroupIdentifier, bundleId, environment
        case appAccountToken, appTransactionId, expiresDate, expiresDateSource, gracePeriodExpiresDate
        case autoRenewEnabled, ownership, revocationDate, revocationReason, revocationType, revocationPercentage
        case previousOriginalTransactionId, migratedToOriginalTransactionId, source, notificationType, subtype
        case notificationUUID, signedDate
    }

    /// The schema version this library writes and reads.
    public static let schemaVersion = 1

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Absent in documents written before the field existed; a newer contract is refused
        // rather than read wrong.
        if let version = try c.decodeIfPresent(Int.self, forKey: .schemaVersion), version != Self.schemaVersion {
            throw DecodingError.dataCorruptedError(
                forKey: .schemaVersion, in: c, debugDescription: "schemaVersion \(version); this library reads \(Self.schemaVersion)")
        }
        eventId = try c.decode(String.self, forKey: .eventId)
        type = try c.decode(EntitlementEventType.self, forKey: .type)
        entitled = try c.decode(Bool.self, forKey: .entitled)
        entitlements = try c.decodeIfPresent([String].self, forKey: .entitlements) ?? []
        previousState = try c.decodeIfPresent(SubscriptionState.self, forKey: .previousState)
        state = try c.decodeIfPresent(SubscriptionState.self, forKey: .state)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        productType = try c.decodeIfPresent(String.self, forKey: .productType)
        subscriptionGroupIdentifier = try c.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        appAccountToken = try c.decodeIfPresent(AppAccountToken.self, forKey: .appAccountToken)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        expiresDate = try c.decodeIfPresent(Int64.self, forKey: .expiresDate)
        expiresDateSource = try c.decodeIfPresent(String.self, forKey: .expiresDateSource)
        gracePeriodExpiresDate = try c.decodeIfPresent(Int64.self, forKey: .gracePeriodExpiresDate)
        autoRenewEnabled = try c.decodeIfPresent(Bool.self, forKey: .autoRenewEnabled)
        ownership = try c.decodeIfPresent(String.self, forKey: .ownership)
        revocationDate = try c.decodeIfPresent(Int64.self, forKey: .revocationDate)
        revocationReason = try c.decodeIfPresent(Int64.self, forKey: .revocationReason)
        revocationType = try c.decodeIfPresent(String.self, forKey: .revocationType)
        revocationPercentage = try c.decodeIfPresent(Int64.self, forKey: .revocationPercentage)
        previousOriginalTransactionId = try c.decodeIfPresent(String.self, forKey: .previousOriginalTransactionId)
        migratedToOriginalTransactionId = try c.decodeIfPresent(String.self, forKey: .migratedToOriginalTransactionId)
        source = try c.decode(Source.self, forKey: .source)
        notificationType = try c.decodeIfPresent(String.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try c.decodeIfPresent(String.self, forKey: .notificationUUID)
        signedDate = try c.decodeIfPresent(Int64.self, forKey: .signedDate)
    }

    /// Reads one event from the bytes a sink receives (`OutputMessage/value`) or a consumer
    /// of the topic reads.
    public init(json bytes: some Collection<UInt8>) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(bytes))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        // Nulls are written, not left out: the contract has every field in every event.
        func put<Value: Encodable>(_ value: Value?, _ key: CodingKeys) throws {
            if let value { try c.encode(value, forKey: key) } else { try c.encodeNil(forKey: key) }
        }
        try c.encode(Self.schemaVersion, forKey: .schemaVersion)
        try c.encode(eventId, forKey: .eventId)
        try c.encode(type, forKey: .type)
        try c.encode(entitled, forKey: .entitled)
        try c.encode(entitlements, forKey: .entitlements)
        try put(previousState, .previousState)
        try put(state, .state)
        try put(originalTransactionId, .originalTransactionId)
        try put(transactionId, .transactionId)
        try put(productId, .productId)
        try put(productType, .productType)
        try put(subscriptionGroupIdentifier, .subscriptionGroupIdentifier)
        try put(bundleId, .bundleId)
        try put(environment, .environment)
        try put(appAccountToken, .appAccountToken)
        try put(appTransactionId, .appTransactionId)
        try put(expiresDate, .expiresDate)
        try put(expiresDateSource, .expiresDateSource)
        try put(gracePeriodExpiresDate, .gracePeriodExpiresDate)
        try put(autoRenewEnabled, .autoRenewEnabled)
        try put(ownership, .ownership)
        try put(revocationDate, .revocationDate)
        try put(revocationReason, .revocationReason)
        try put(revocationType, .revocationType)
        try put(revocationPercentage, .revocationPercentage)
        try put(previousOriginalTransactionId, .previousOriginalTransactionId)
        try put(migratedToOriginalTransactionId, .migratedToOriginalTransactionId)
        try c.encode(source, forKey: .source)
        try put(notificationType, .notificationType)
        try put(subtype, .subtype)
        try put(notificationUUID, .notificationUUID)
        try put(signedDate, .signedDate)
    }
}

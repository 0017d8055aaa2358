public import AppStoreModels
import SignetCore

/// One entitlement change, as published to the sinks.
///
/// Every field is always present in the JSON (null when unknown), in a fixed order, so
/// the same event always serialises to the same bytes. The contract is
/// `Schemas/entitlement-event.schema.json`. ``json`` writes it; `Codable` reads the same
/// document back (a sink, a consumer of the Kafka topic) and writes it with `JSONEncoder`.
public struct EntitlementEvent: Sendable, Hashable {
    /// Where the change came from.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable {
        /// An App Store Server Notification.
        case notification
        /// A signed transaction the app forwarded after a purchase.
        case appTransaction = "app_transaction"
        /// A signed renewal info on its own.
        case renewalInfo = "renewal_info"
        /// Apple's current status of the purchase (Get All Subscription Statuses: `signet reconcile`).
        case subscriptionStatus = "subscription_status"
        /// Time alone: the period or the grace period ended and no notification said so
        /// (the `transition` stage's expiry sweep).
        case clock
    }

    /// Deterministic: the same input applied to the same prior state yields the same id.
    public var eventId: String
    /// What changed.
    public var type: EntitlementEventType
    /// Whether the customer has access after this change: the answer to act on.
    public var entitled: Bool
    /// The entitlement names the purchase's product or subscription group grants (the store's
    /// `entitlements:` mapping, ``EntitlementNames``), sorted; empty when none is configured.
    /// Whether they are granted now is ``entitled``.
    public var entitlements: [String] = []
    /// Nil when this purchase was unknown before.
    public var previousState: SubscriptionState?
    /// Nil only for an `unknown_notification` about a purchase Signet has no state for.
    public var state: SubscriptionState?
    /// The purchase: Apple's `originalTransactionId`, the same for every renewal.
    public var originalTransactionId: String?
    /// The transaction that caused the change (a renewal's own id).
    public var transactionId: String?
    /// The product of the current period.
    public var productId: String?
    /// Apple's product type: `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable`, `Non-Renewing Subscription`.
    public var productType: String?
    /// The subscription group of an auto-renewable subscription.
    public var subscriptionGroupIdentifier: String?
    /// The app the purchase belongs to.
    public var bundleId: String?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// The app's own id of the customer, set at purchase (a UUID, canonical lower case).
    public var appAccountToken: AppAccountToken?
    /// Apple's `appTransactionId`: the download of the app the purchase was made in; the key
    /// of the app-level events (`consent_rescinded`, `consent_cleared`).
    public var appTransactionId: String? = nil
    /// The end of the current period (``SubscriptionSnapshot/periodEnd``).
    public var expiresDate: Int64?
    /// Where ``expiresDate`` comes from: `transaction`, `renewal_info`, `duration_policy`, or
    /// `unknown` (a subscription with no known end); nil for products that never expire.
    public var expiresDateSource: String?
    /// When the billing grace period ends (ms since 1970), while in it.
    public var gracePeriodExpiresDate: Int64?
    /// Whether the subscription renews at the end of the period.
    public var autoRenewEnabled: Bool?
    /// `PURCHASED`, `FAMILY_SHARED` or `ASSIGNED`.
    public var ownership: String?
    /// When Apple refunded or revoked the purchase (ms since 1970).
    public var revocationDate: Int64?
    /// Apple's `revocationReason`: 1 an issue in the app, 0 another reason.
    public var revocationReason: Int64?
    /// Apple's `revocationType`: `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var revocationType: String?
    /// With `REFUND_PRORATED`: the share Apple refunded, in milliunits (50000 is 50%).
    public var revocationPercentage: Int64? = nil
    /// The purchase this one was migrated from (Apple's `previousOriginalTransactionId`).
    public var previousOriginalTransactionId: String? = nil
    /// The purchase this one was migrated to: set on a `migrated` event and after it.
    public var migratedToOriginalTransactionId: String? = nil
    /// Where the change came from.
    public var source: Source
    /// The notification's type, when a notification caused the change.
    public var notificationType: String?
    /// The notification's subtype, when Apple gave one.
    public var subtype: String?
    /// The notification's id (the same on every retry of it).
    public var notificationUUID: String?
    /// The signedDate of the notification (or forwarded transaction) that caused the change;
    /// nil for `clock` events.
    public var signedDate: Int64?

    /// The message key: the purchase, or for an app-level event the app transaction.
    public var messageKey: String { originalTransactionId ?? appTransactionId ?? "" }

    /// The event as one line of JSON (no trailing newline).
    public var json: [UInt8] {
        var out = JSONText(reserving: 768)
        out.beginObject()
        out.key("schemaVersion"); out.int(1)
        out.key("eventId"); out.string(eventId)
        out.key("type"); out.string(type.rawValue)
        out.key("entitled"); out.bool(entitled)
        out.key("entitlements")
        out.beginArray()
        for name in entitlements { out.string(name) }
        out.endArray()
        out.nullable("previousState", previousState?.rawValue)
        out.nullable("state", state?.rawValue)
        out.nullable("originalTransactionId", originalTransactionId)
        out.nullable("transactionId", transactionId)
        out.nullable("productId", productId)
        out.nullable("productType", productType)
        out.nullable("subscriptionGroupIdentifier", subscriptionGroupIdentifier)
        out.nullable("bundleId", bundleId)
        out.nullable("environment", environment)
        out.nullable("appAccountToken", appAccountToken?.description)
        out.nullable("appTransactionId", appTransactionId)
        out.nullable("expiresDate", expiresDate)
        out.nullable("expiresDateSource", expiresDateSource)
        out.nullable("gracePeriodExpiresDate", gracePeriodExpiresDate)
        out.key("autoRenewEnabled")
        if let autoRenewEnabled { out.bool(autoRenewEnabled) } else { out.null() }
        out.nullable("ownership", ownership)
        out.nullable("revocationDate", revocationDate)
        out.nullable("revocationReason", revocationReason)
        out.nullable("revocationType", revocationType)
        out.nullable("revocationPercentage", revocationPercentage)
        out.nullable("previousOriginalTransactionId", previousOriginalTransactionId)
        out.nullable("migratedToOriginalTransactionId", migratedToOriginalTransactionId)
        out.key("source"); out.string(source.rawValue)
        out.nullable("notificationType", notificationType)
        out.nullable("subtype", subtype)
        out.nullable("notificationUUID", notificationUUID)
        out.nullable("signedDate", signedDate)
        out.endObject()
        return out.bytes
    }
}

extension JSONText {
    fileprivate mutating func nullable(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    fileprivate mutating func nullable(_ name: String, _ value: Int64?) {
        key(name)
        if let value { int(value) } else { null() }
    }
}

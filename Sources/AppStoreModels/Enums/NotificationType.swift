/// The event that caused the App Store to send a version 2 notification (`notificationType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/notificationtype>
public struct NotificationType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `SUBSCRIBED`: The customer subscribed to an auto-renewable subscription (see the subtype for first purchase or resubscribe).
    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    /// `DID_CHANGE_RENEWAL_PREF`: The customer changed their subscription plan; an upgrade takes effect at once, a downgrade at the next renewal.
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    /// `DID_CHANGE_RENEWAL_STATUS`: The customer or the App Store turned auto-renew on or off.
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    /// `OFFER_REDEEMED`: The customer redeemed a promotional offer or offer code on an active subscription.
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
    /// `DID_RENEW`: The subscription renewed (possibly after a billing failure, subtype BILLING_RECOVERY).
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    /// `EXPIRED`: The subscription expired; the subtype says why.
    public static let expired = NotificationType(rawValue: "EXPIRED")
    /// `DID_FAIL_TO_RENEW`: The subscription failed to renew because of a billing issue; it may be in a grace period.
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    /// `GRACE_PERIOD_EXPIRED`: The billing grace period ended without a renewal; access should end.
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    /// `PRICE_INCREASE`: The system informed the customer of a price increase (subtype PENDING or ACCEPTED).
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")
    /// `REFUND`: The App Store refunded a transaction; the transaction carries revocationDate and revocationReason.
    public static let refund = NotificationType(rawValue: "REFUND")
    /// `REFUND_DECLINED`: The App Store declined a refund request.
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    /// `REFUND_REVERSED`: The App Store reversed a previously granted refund; reinstate the content.
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    /// `CONSUMPTION_REQUEST`: The customer asked for a refund and the App Store requests consumption information.
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    /// `RENEWAL_EXTENDED`: The App Store extended the renewal date of one subscription.
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    /// `RENEWAL_EXTENSION`: The App Store is extending renewal dates for all eligible subscribers (subtype SUMMARY or FAILURE).
    public static let renewalExtension = NotificationType(rawValue: "RENEWAL_EXTENSION")
    /// `REVOKE`: A Family Sharing entitlement is no longer available through sharing.
    public static let revoke = NotificationType(rawValue: "REVOKE")
    /// `TEST`: A test notification requested through the App Store Server API.
    public static let test = NotificationType(rawValue: "TEST")
    /// `EXTERNAL_PURCHASE_TOKEN`: An External Purchase API token event (subtypes UNREPORTED, CREATED, ACTIVE_TOKEN_REMINDER).
    public static let externalPurchaseToken = NotificationType(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    /// `ONE_TIME_CHARGE`: The customer bought a consumable, non-consumable or non-renewing subscription.
    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    /// `METADATA_UPDATE`: Subscription metadata changed (Advanced Commerce API).
    public static let metadataUpdate = NotificationType(rawValue: "METADATA_UPDATE")
    /// `MIGRATION`: A subscription was migrated (Advanced Commerce API); see previousOriginalTransactionId.
    public static let migration = NotificationType(rawValue: "MIGRATION")
    /// `PRICE_CHANGE`: A subscription price changed (Advanced Commerce API).
    public static let priceChange = NotificationType(rawValue: "PRICE_CHANGE")
    /// `RESCIND_CONSENT`: A parent or guardian withdrew consent for a child's use of the app; the payload carries appData.
    public static let rescindConsent = NotificationType(rawValue: "RESCIND_CONSENT")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [NotificationType] = [
        .subscribed, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didRenew, .expired, .didFailToRenew, .gracePeriodExpired, .priceIncrease, .refund, .refundDeclined, .refundReversed, .consumptionRequest, .renewalExtended, .renewalExtension, .revoke, .test, .externalPurchaseToken, .oneTimeCharge, .metadataUpdate, .migration, .priceChange, .rescindConsent,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension NotificationType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension NotificationType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

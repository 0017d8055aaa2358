/// Further detail for some notification types (`subtype`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/subtype>
public struct Subtype: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `INITIAL_BUY`: First purchase of the subscription (or first within its group).
    public static let initialBuy = Subtype(rawValue: "INITIAL_BUY")
    /// `RESUBSCRIBE`: The customer resubscribed after the subscription had expired.
    public static let resubscribe = Subtype(rawValue: "RESUBSCRIBE")
    /// `DOWNGRADE`: The customer downgraded; it takes effect at the next renewal.
    public static let downgrade = Subtype(rawValue: "DOWNGRADE")
    /// `UPGRADE`: The customer upgraded; it takes effect at once.
    public static let upgrade = Subtype(rawValue: "UPGRADE")
    /// `AUTO_RENEW_ENABLED`: Auto-renew was turned on.
    public static let autoRenewEnabled = Subtype(rawValue: "AUTO_RENEW_ENABLED")
    /// `AUTO_RENEW_DISABLED`: Auto-renew was turned off (by the customer or after a refund).
    public static let autoRenewDisabled = Subtype(rawValue: "AUTO_RENEW_DISABLED")
    /// `VOLUNTARY`: The subscription expired after the customer turned auto-renew off.
    public static let voluntary = Subtype(rawValue: "VOLUNTARY")
    /// `BILLING_RETRY`: The subscription expired because the billing retry period ended without success.
    public static let billingRetry = Subtype(rawValue: "BILLING_RETRY")
    /// `PRICE_INCREASE`: The subscription expired because the customer did not consent to a price increase.
    public static let priceIncrease = Subtype(rawValue: "PRICE_INCREASE")
    /// `GRACE_PERIOD`: The renewal failed but the subscription is in a billing grace period.
    public static let gracePeriod = Subtype(rawValue: "GRACE_PERIOD")
    /// `PENDING`: The customer has not yet responded to a price increase that needs consent.
    public static let pending = Subtype(rawValue: "PENDING")
    /// `ACCEPTED`: The customer consented to the price increase, or it needed no consent.
    public static let accepted = Subtype(rawValue: "ACCEPTED")
    /// `BILLING_RECOVERY`: A subscription that had failed to renew renewed successfully.
    public static let billingRecovery = Subtype(rawValue: "BILLING_RECOVERY")
    /// `PRODUCT_NOT_FOR_SALE`: The subscription expired because the product was not for sale at renewal time.
    public static let productNotForSale = Subtype(rawValue: "PRODUCT_NOT_FOR_SALE")
    /// `SUMMARY`: The renewal-date extension for all subscribers completed; the payload carries a summary.
    public static let summary = Subtype(rawValue: "SUMMARY")
    /// `FAILURE`: The renewal-date extension failed for one subscription.
    public static let failure = Subtype(rawValue: "FAILURE")
    /// `UNREPORTED`: An external purchase token was not reported in time.
    public static let unreported = Subtype(rawValue: "UNREPORTED")
    /// `CREATED`: Apple created an external purchase custom link token.
    public static let created = Subtype(rawValue: "CREATED")
    /// `ACTIVE_TOKEN_REMINDER`: A reminder that an external purchase custom link token is still active.
    public static let activeTokenReminder = Subtype(rawValue: "ACTIVE_TOKEN_REMINDER")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [Subtype] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary, .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale, .summary, .failure, .unreported, .created, .activeTokenReminder,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension Subtype: CustomStringConvertible {
    public var description: String { rawValue }
}

extension Subtype: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// One notification type together with one of its documented subtypes (nil: no subtype).
public struct NotificationCombination: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The notification type.
    public let notificationType: NotificationType
    /// The subtype, or nil for a notification sent without one.
    public let subtype: Subtype?

    /// Creates a combination.
    public init(_ notificationType: NotificationType, _ subtype: Subtype? = nil) {
        self.notificationType = notificationType
        self.subtype = subtype
    }

    public var description: String {
        subtype.map { "\(notificationType.rawValue)/\($0.rawValue)" } ?? notificationType.rawValue
    }

    /// Every type/subtype pair Apple documents, in a fixed order (types in documentation
    /// order, a type's subtypes in documentation order, "no subtype" where Apple sends it).
    /// Iterate this rather than ``NotificationType/documentedSubtypes`` when order matters.
    public static let documented: [NotificationCombination] = [
        .init(.subscribed, .initialBuy),
        .init(.subscribed, .resubscribe),
        .init(.didChangeRenewalPref, .upgrade),
        .init(.didChangeRenewalPref, .downgrade),
        // A customer who cancels a pending downgrade gets the type without a subtype.
        .init(.didChangeRenewalPref),
        .init(.didChangeRenewalStatus, .autoRenewEnabled),
        .init(.didChangeRenewalStatus, .autoRenewDisabled),
        .init(.offerRedeemed, .upgrade),
        .init(.offerRedeemed, .downgrade),
        .init(.offerRedeemed),
        .init(.didRenew),
        .init(.didRenew, .billingRecovery),
        .init(.expired, .voluntary),
        .init(.expired, .billingRetry),
        .init(.expired, .priceIncrease),
        .init(.expired, .productNotForSale),
        .init(.didFailToRenew),
        .init(.didFailToRenew, .gracePeriod),
        .init(.gracePeriodExpired),
        .init(.priceIncrease, .pending),
        .init(.priceIncrease, .accepted),
        .init(.refund),
        .init(.refundDeclined),
        .init(.refundReversed),
        .init(.consumptionRequest),
        .init(.renewalExtended),
        .init(.renewalExtension, .summary),
        .init(.renewalExtension, .failure),
        .init(.revoke),
        .init(.test),
        .init(.externalPurchaseToken, .unreported),
        .init(.externalPurchaseToken, .created),
        .init(.externalPurchaseToken, .activeTokenReminder),
        .init(.oneTimeCharge),
        .init(.metadataUpdate),
        .init(.migration),
        .init(.priceChange),
        .init(.rescindConsent),
    ]
}

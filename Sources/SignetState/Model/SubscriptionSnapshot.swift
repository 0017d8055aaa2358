public import AppStoreModels

/// What Signet knows about one purchase (one `originalTransactionId`): the newest
/// transaction of the current period, the newest renewal info, and the state derived
/// from them.
///
/// This is what the store keeps and what `signet state show` prints. Dates are Apple's
/// milliseconds since 1970.
public struct SubscriptionSnapshot: Sendable, Hashable, Encodable {
    /// The purchase: Apple's `originalTransactionId`, the same for every renewal.
    public var originalTransactionId: String
    /// The derived state (as of ``evaluatedAt``).
    public var state: SubscriptionState
    /// Whether the customer may access the product (as of ``evaluatedAt``, under the policy in force then).
    public var entitled: Bool

    // The transaction that grants the current period (newest by purchaseDate, then signedDate).
    /// The latest transaction applied (a renewal's own id).
    public var transactionId: String?
    /// The product of the current period.
    public var productId: String?
    /// Apple's product type (`Auto-Renewable Subscription`, `Non-Consumable`, ...).
    public var productType: String?
    /// The subscription group of an auto-renewable subscription (an entitlement may be granted
    /// by a whole group: ``EntitlementNames``).
    public var subscriptionGroupIdentifier: String?
    /// The app the purchase belongs to.
    public var bundleId: String?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// The app's own id of the customer, set at purchase.
    public var appAccountToken: AppAccountToken?
    /// `PURCHASED`, `FAMILY_SHARED` or `ASSIGNED`.
    public var ownership: String?
    /// When the current period was bought (ms since 1970).
    public var purchaseDate: Int64?
    /// The transaction's expiresDate, or for a non-renewing subscription without one, the
    /// end the `non_renewing_durations` policy gave it (see ``expiresDateSource``).
    public var expiresDate: Int64?
    /// The signedDate of the latest transaction applied: an older one is not applied over it.
    public var transactionSignedDate: Int64?
    /// When Apple refunded or revoked the purchase (ms since 1970).
    public var revocationDate: Int64?
    /// Apple's `revocationReason`: 1 an issue in the app, 0 another reason.
    public var revocationReason: Int64?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`, `ASSIGNMENT_REVOKE` (`FAMILY_REVOKE`
    /// is also set for a `REVOKE` notification without one).
    public var revocationType: String?
    /// Apple's `revocationPercentage` with `REFUND_PRORATED`: the share refunded, in
    /// milliunits (50000 is 50%).
    public var revocationPercentage: Int64?

    // The newest renewal info (auto-renewable subscriptions).
    /// Whether the subscription renews at the end of the period (renewal info's `autoRenewStatus`).
    public var autoRenewEnabled: Bool?
    /// The product it renews to (a downgrade takes effect at the next renewal).
    public var autoRenewProductId: String?
    /// Whether Apple is retrying a failed renewal's billing.
    public var isInBillingRetryPeriod: Bool?
    /// When the billing grace period ends (ms since 1970), while in it.
    public var gracePeriodExpiresDate: Int64?
    /// Apple's `expirationIntent`: why the subscription expired (1 cancelled, 2 billing error, …).
    public var expirationIntent: Int64?
    /// The signedDate of the latest renewal info applied.
    public var renewalSignedDate: Int64?
    /// The renewal info's `recentSubscriptionStartDate`: the start of the current run of paid
    /// service, ignoring lapses shorter than 60 days (ms since 1970). What a customer's tenure is
    /// counted from; nil until a renewal info carrying it was applied.
    public var recentSubscriptionStartDate: Int64?

    /// The newest signedDate seen for this purchase: the instant state was derived at.
    public var evaluatedAt: Int64
    /// The last notification applied (for diagnosis).
    public var lastNotificationType: String?
    /// The subtype of the latest notification applied.
    public var lastSubtype: String?
    /// The id of the latest notification applied.
    public var lastNotificationUUID: String?

    /// `duration_policy` when ``expiresDate`` came from `non_renewing_durations`; nil when it
    /// is the transaction's own (or absent).
    public var expiresDateSource: String?
    /// The renewal info's renewalDate: when the most recent purchase of the subscription
    /// expires, signed by Apple. Later than ``expiresDate`` when Apple renewed and Signet never
    /// saw that renewal's transaction.
    public var renewalDate: Int64?

    /// Apple's `appTransactionId` (2025): the customer's download of the app this purchase was
    /// made in, which app-level notifications (RESCIND_CONSENT) name.
    public var appTransactionId: String?
    /// The purchase this one was migrated from: Apple's `previousOriginalTransactionId`.
    public var previousOriginalTransactionId: String?
    /// The purchase this one was migrated to (its transaction named this one as its
    /// `previousOriginalTransactionId`): set, this purchase is `migrated` and grants nothing.
    public var migratedToOriginalTransactionId: String?

    /// A snapshot of a purchase seen for the first time.
    public init(originalTransactionId: String, state: SubscriptionState = .active, entitled: Bool = false, evaluatedAt: Int64 = 0) {
        self.originalTransactionId = originalTransactionId
        self.state = state
        self.entitled = entitled
        self.evaluatedAt = evaluatedAt
    }

    /// The end of the current period: the transaction's ``expiresDate``, or for an
    /// auto-renewable subscription the renewal info's ``renewalDate`` when Apple signed a later
    /// one (a renewal whose transaction Signet did not see). Nil: no end is known.
    public var periodEnd: Int64? {
        guard productType == TransactionType.autoRenewableSubscription.rawValue, let renewalDate else { return expiresDate }
        return max(expiresDate ?? renewalDate, renewalDate)
    }

    /// Where ``periodEnd`` comes from, as published in events: `transaction`, `renewal_info`,
    /// `duration_policy`, or `unknown` (a subscription without any end, e.g. a non-renewing one
    /// with no `non_renewing_durations` entry); nil for products that never expire.
    public var periodEndSource: String? {
        switch productType.map(TransactionType.init(rawValue:)) {
        case .consumable?, .nonConsumable?: return nil
        default:
            guard let end = periodEnd else { return "unknown" }
            if end != expiresDate { return "renewal_info" }
            return expiresDateSource ?? "transaction"
        }
    }

    /// The earliest instant after ``evaluatedAt`` at which time alone may change the derived
    /// state or entitlement (the period or the grace period ends); nil when none is ahead.
    ///
    /// The expiry sweep visits exactly the snapshots whose boundary has passed, so a store keeps
    /// this value in an indexed column (`StateTransaction/subscriptionsDue(atOrBefore:limit:)`).
    public var nextBoundary: Int64? {
        guard revocationDate == nil, migratedToOriginalTransactionId == nil else { return nil }
        switch productType.map(TransactionType.init(rawValue:)) {
        case .consumable?, .nonConsumable?: return nil
        default: break
        }
        return [periodEnd, gracePeriodExpiresDate].compactMap { $0 }.filter { $0 > evaluatedAt }.min()
    }

    /// Whether Signet expects this purchase to renew at the end of its period: an
    /// auto-renewable subscription with auto-renew on, no expiration intent, not in billing
    /// retry, not revoked and not migrated (`StateStore/staleSubscriptions(endedAfter:endedBefore:limit:)`).
    public var expectsRenewal: Bool {
        productType == TransactionType.autoRenewableSubscription.rawValue && autoRenewEnabled == true
            && expirationIntent == nil && isInBillingRetryPeriod != true && revocationDate == nil
            && migratedToOriginalTransactionId == nil
    }

    /// Whether a period with an expiry is still running at `instant`.
    func isPeriodCurrent(at instant: Int64) -> Bool {
        guard let periodEnd else { return true }
        return periodEnd > instant
    }
}

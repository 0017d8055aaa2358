import AppStoreModels

/// What Signet knows about one purchase (one `originalTransactionId`): the newest
/// transaction of the current period, the newest renewal info, and the state derived
/// from them.
///
/// This is what the store keeps and what `signet state show` prints. Dates are Apple's
/// milliseconds since 1970.
public struct SubscriptionSnapshot: Sendable, Hashable, Encodable {
    public var originalTransactionId: String
    /// The derived state (as of ``evaluatedAt``).
    public var state: SubscriptionState
    /// Whether the customer may access the product (as of ``evaluatedAt``, under the policy in force then).
    public var entitled: Bool

    // The transaction that grants the current period (newest by purchaseDate, then signedDate).
    public var transactionId: String?
    public var productId: String?
    /// Apple's product type (`Auto-Renewable Subscription`, `Non-Consumable`, ...).
    public var productType: String?
    public var bundleId: String?
    public var environment: String?
    public var appAccountToken: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownership: String?
    public var purchaseDate: Int64?
    public var expiresDate: Int64?
    public var transactionSignedDate: Int64?
    public var revocationDate: Int64?
    public var revocationReason: Int64?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE` (also set for a `REVOKE` notification).
    public var revocationType: String?

    // The newest renewal info (auto-renewable subscriptions).
    public var autoRenewEnabled: Bool?
    public var autoRenewProductId: String?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Int64?
    public var expirationIntent: Int64?
    public var renewalSignedDate: Int64?

    /// The newest signedDate seen for this purchase: the instant state was derived at.
    public var evaluatedAt: Int64
    /// The last notification applied (for diagnosis).
    public var lastNotificationType: String?
    public var lastSubtype: String?
    public var lastNotificationUUID: String?

    public init(originalTransactionId: String, state: SubscriptionState = .active, entitled: Bool = false, evaluatedAt: Int64 = 0) {
        self.originalTransactionId = originalTransactionId
        self.state = state
        self.entitled = entitled
        self.evaluatedAt = evaluatedAt
    }

    /// Whether a period with an expiry is still running at `instant`.
    func isPeriodCurrent(at instant: Int64) -> Bool {
        guard let expiresDate else { return true }
        return expiresDate > instant
    }
}

public import AppStoreModels

/// The answer to "what may this customer access now" for one purchase, evaluated at a
/// given instant (the CLI uses the current time).
public struct Entitlement: Sendable, Hashable, Encodable {
    /// The purchase: Apple's `originalTransactionId`.
    public var originalTransactionId: String
    /// The product of the current period.
    public var productId: String?
    /// Apple's product type (`Auto-Renewable Subscription`, `Non-Consumable`, …).
    public var productType: String?
    /// The subscription group of an auto-renewable subscription.
    public var subscriptionGroupIdentifier: String?
    /// The entitlement names this purchase's product or group grants (``EntitlementNames``),
    /// sorted; ``entitled`` says whether they are granted at ``evaluatedAt``.
    public var entitlements: [String]
    /// The app the purchase belongs to.
    public var bundleId: String?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// The app's own id of the customer, set at purchase.
    public var appAccountToken: AppAccountToken?
    /// `PURCHASED`, `FAMILY_SHARED` or `ASSIGNED`.
    public var ownership: String?
    /// The latest transaction applied.
    public var transactionId: String?
    /// The state at ``evaluatedAt`` (an active period past its expiry reads as `expired`).
    public var state: SubscriptionState
    /// Whether the entitlements are granted at ``evaluatedAt``: the answer to act on (with ``restricted``).
    public var entitled: Bool
    /// The end of the current period (``SubscriptionSnapshot/periodEnd``).
    public var expiresDate: Int64?
    /// `transaction`, `renewal_info`, `duration_policy` or `unknown` (no end known); nil for
    /// products that never expire.
    public var expiresDateSource: String?
    /// When the billing grace period ends (ms since 1970), while in it.
    public var gracePeriodExpiresDate: Int64?
    /// Whether the subscription renews at the end of the period.
    public var autoRenewEnabled: Bool?
    /// The purchase this one was migrated from (Apple's `previousOriginalTransactionId`).
    public var previousOriginalTransactionId: String?
    /// The purchase this one was migrated to (then ``state`` is `migrated`): ask about that one.
    public var migratedToOriginalTransactionId: String?
    /// A parent or guardian withdrew consent for the app download this purchase was made in
    /// (RESCIND_CONSENT, by its `appTransactionId`): restrict the child's access now, whatever
    /// ``entitled`` says, until the restriction is cleared (docs/state-machine.md).
    public var restricted = false
    /// The instant (ms since 1970) the answer holds for.
    public var evaluatedAt: Int64

    /// The answer for `snapshot` at `evaluatedAt`, in `state`, naming what `names` grant.
    public init(
        snapshot: SubscriptionSnapshot, state: SubscriptionState, entitled: Bool, evaluatedAt: Int64, names: EntitlementNames = .none
    ) {
        originalTransactionId = snapshot.originalTransactionId
        productId = snapshot.productId
        productType = snapshot.productType
        subscriptionGroupIdentifier = snapshot.subscriptionGroupIdentifier
        entitlements = names.names(productId: snapshot.productId, subscriptionGroupId: snapshot.subscriptionGroupIdentifier)
        bundleId = snapshot.bundleId
        environment = snapshot.environment
        appAccountToken = snapshot.appAccountToken
        ownership = snapshot.ownership
        transactionId = snapshot.transactionId
        self.state = state
        self.entitled = entitled
        expiresDate = snapshot.periodEnd
        expiresDateSource = snapshot.periodEndSource
        gracePeriodExpiresDate = snapshot.gracePeriodExpiresDate
        autoRenewEnabled = snapshot.autoRenewEnabled
        previousOriginalTransactionId = snapshot.previousOriginalTransactionId
        migratedToOriginalTransactionId = snapshot.migratedToOriginalTransactionId
        self.evaluatedAt = evaluatedAt
    }
}

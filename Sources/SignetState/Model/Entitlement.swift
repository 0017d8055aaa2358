public import AppStoreModels

/// The answer to "what may this customer access now" for one purchase, evaluated at a
/// given instant (the CLI uses the current time).
public struct Entitlement: Sendable, Hashable, Encodable {
    public var originalTransactionId: String
    public var productId: String?
    public var productType: String?
    public var subscriptionGroupIdentifier: String?
    /// The entitlement names this purchase's product or group grants (``EntitlementNames``),
    /// sorted; ``entitled`` says whether they are granted at ``evaluatedAt``.
    public var entitlements: [String]
    public var bundleId: String?
    public var environment: String?
    public var appAccountToken: AppAccountToken?
    public var ownership: String?
    public var transactionId: String?
    /// The state at ``evaluatedAt`` (an active period past its expiry reads as `expired`).
    public var state: SubscriptionState
    public var entitled: Bool
    /// The end of the current period (``SubscriptionSnapshot/periodEnd``).
    public var expiresDate: Int64?
    /// `transaction`, `renewal_info`, `duration_policy` or `unknown` (no end known); nil for
    /// products that never expire.
    public var expiresDateSource: String?
    public var gracePeriodExpiresDate: Int64?
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

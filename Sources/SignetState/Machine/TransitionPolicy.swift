/// The choices businesses make differently, set under `policy:` of the `transition`
/// stage. Defaults are documented in docs/state-machine.md.
public struct TransitionPolicy: Sendable, Hashable {
    /// Whether a subscription in billing retry without a grace period keeps access
    /// (a period still paid for keeps access regardless).
    public var billingRetryEntitled = false
    /// Whether a subscription in the billing grace period keeps access (Apple's intent).
    public var gracePeriodEntitled = true
    /// Whether purchases shared through Family Sharing entitle the family member.
    public var familySharedEntitled = true
    /// Whether a signed transaction the app forwards right after a purchase grants access
    /// before Apple's notification arrives; when false such inputs are ignored.
    public var entitleOnAppTransaction = true
    /// Whether a notification type Signet does not know is rejected (dead letter)
    /// instead of surfaced as an `unknown_notification` event.
    public var rejectUnknownTypes = false
    /// How long non-renewing subscriptions without an `expiresDate` last, by product
    /// (`non_renewing_durations`, a setting of the `transition` stage itself).
    public var nonRenewingDurations = NonRenewingDurations()

    /// The defaults (`transition`'s `policy:` in a pipeline file).
    public init() {}

    /// The YAML keys, for documentation and error messages.
    public static let keys = [
        "billing_retry_entitled", "grace_period_entitled", "family_shared_entitled",
        "entitle_on_app_transaction", "reject_unknown_types",
    ]
}

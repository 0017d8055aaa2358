/// Where one purchase (one `originalTransactionId`) stands.
///
/// Auto-renewable subscriptions move between `active`, `grace_period`, `billing_retry`,
/// `expired`, `refunded`, `revoked` and `migrated`; non-renewing subscriptions between `active` and
/// `expired`; non-consumables are `owned` and consumables `consumed` until refunded.
/// The raw values are part of the event contract (see docs/state-machine.md).
public enum SubscriptionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// The current period is paid for.
    case active
    /// Renewal failed, Apple retries, and the billing grace period still runs.
    case gracePeriod = "grace_period"
    /// Renewal failed and Apple retries; no grace period (or it ended).
    case billingRetry = "billing_retry"
    /// The period ended without renewal.
    case expired
    /// The App Store refunded the transaction of the current period.
    case refunded
    /// Access was revoked without a refund of this transaction (Family Sharing revoke).
    case revoked
    /// A non-consumable the customer owns.
    case owned
    /// A consumable that was bought (deliver it once); `entitled` means "not refunded".
    case consumed
    /// The subscription moved to another purchase (Advanced Commerce's Migrate a Subscription:
    /// a new originalTransactionId whose transaction names this one as its
    /// `previousOriginalTransactionId`); access comes from the new purchase now, never this one.
    case migrated
}

/// What changed for a customer; the `type` field of an entitlement-change event.
///
/// The raw values are part of the event contract (Schemas/entitlement-event.schema.json,
/// docs/state-machine.md) and are never renamed.
public enum EntitlementEventType: String, Sendable, Hashable, Codable, CaseIterable {
    /// Access starts: first purchase, resubscribe, one-time purchase, first sight of an active
    /// purchase, a new paid period after a refund or expiry, family access shared again.
    case granted
    /// A new period of the same product started (DID_RENEW, or a later renewalDate in Apple's
    /// signed renewal info when the renewal's own notification never arrived).
    case renewed
    /// The same period ends later (RENEWAL_EXTENDED, or a re-signed transaction with a later expiry).
    case extended
    /// The current period's product changed (upgrade / crossgrade takes effect); after the state
    /// event when the state changed too.
    case productChanged = "product_changed"
    /// Renewal failed and the billing grace period started.
    case gracePeriodEntered = "grace_period_entered"
    /// Renewal failed; Apple retries billing (no grace period, or it ended: GRACE_PERIOD_EXPIRED
    /// or the expiry sweep).
    case billingRetryEntered = "billing_retry_entered"
    /// Billing succeeded after a failure (DID_RENEW / BILLING_RECOVERY).
    case recovered
    /// The subscription (or a non-renewing period) ended: EXPIRED, or the expiry sweep when no
    /// notification said so.
    case expired
    /// The transaction granting access was refunded.
    case refunded
    /// Access was revoked (Family Sharing, or an organization took back an assigned seat).
    case revoked
    /// The subscription moved to a new purchase (MIGRATION, Advanced Commerce): this one ends,
    /// and `migratedToOriginalTransactionId` names the purchase that grants access from now on.
    case migrated
    /// REFUND_REVERSED, and only it, gave access back while the period still runs.
    case restored
    /// `entitled` flipped without a state change (e.g. a paid-up period ended during billing retry).
    case entitlementChanged = "entitlement_changed"
    /// The customer turned auto-renew on.
    case autoRenewEnabled = "auto_renew_enabled"
    /// The customer (or the App Store) turned auto-renew off.
    case autoRenewDisabled = "auto_renew_disabled"
    /// The product that renews next changed (downgrade scheduled or cancelled).
    case renewalPreferenceChanged = "renewal_preference_changed"
    /// The customer asked for a refund; Apple wants consumption information within 12 hours.
    case consumptionRequested = "consumption_requested"
    /// A parent or guardian withdrew consent for a child's use of the app (RESCIND_CONSENT): an
    /// app-level event keyed by `appTransactionId` (no purchase); every purchase of that app
    /// transaction answers `restricted: true` until it is cleared.
    case consentRescinded = "consent_rescinded"
    /// A later notification about the same app transaction lifted a consent restriction.
    case consentCleared = "consent_cleared"
    /// A notification type Signet does not know; kept and surfaced, state unchanged.
    case unknownNotification = "unknown_notification"
}

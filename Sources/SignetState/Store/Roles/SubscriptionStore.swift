import AppStoreModels

/// Purchases: one snapshot each, found by originalTransactionId or appAccountToken (the
/// public queries of ``StateStore``), paged through, and the entitlement names every answer
/// carries.
package protocol SubscriptionStore: StateStore {
    /// Up to `limit` original transaction ids of stored purchases, in ascending order, after
    /// `after` (nil: from the first): `signet reconcile --all` pages through every purchase.
    func originalTransactionIds(after: String?, limit: Int) throws -> [String]

    /// The purchase with the consent restriction of the download it was made in (nil when none
    /// was recorded): what an entitlement answer reads. A store that can join them answers in
    /// one read (PostgreSQL: one round trip, not two); the default asks for each.
    func subscriptionWithConsent(originalTransactionId: String) throws -> (SubscriptionSnapshot, ConsentRestriction?)?

    /// Every purchase of the account, each with its download's consent restriction, in
    /// ascending originalTransactionId.
    func subscriptionsWithConsent(appAccountToken: AppAccountToken) throws -> [(SubscriptionSnapshot, ConsentRestriction?)]

    /// The purchases made in the app download `appTransactionId` names (Apple's one id per
    /// customer and app), in ascending originalTransactionId: the support desk's search.
    func subscriptions(appTransactionId: String) throws -> [SubscriptionSnapshot]

    /// Up to `limit` auto-renewable subscriptions, in ascending originalTransactionId after
    /// `after` (nil: from the first), whose period ended after `endedAfter` and at or before
    /// `endedBefore` (ms since 1970) although Signet expects them to renew: auto-renew on, no
    /// expiration intent, not in billing retry, not revoked, not migrated. Apple renewed them and the
    /// notification never came, or they lapsed unannounced: the purchases `appstore_reconcile`
    /// asks Apple about, paging with `after` past those it asked already.
    func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase]

    /// Stores `names` in place of the mapping kept so far (a pipeline's `entitlements:`,
    /// applied when its store opens), for this process and every later reader of the store.
    func replaceEntitlementNames(_ names: EntitlementNames) throws
}

extension SubscriptionStore {
    package func subscriptionWithConsent(originalTransactionId: String) throws -> (SubscriptionSnapshot, ConsentRestriction?)? {
        guard let snapshot = try subscription(originalTransactionId: originalTransactionId) else { return nil }
        return (snapshot, try restriction(of: snapshot))
    }

    package func subscriptionsWithConsent(appAccountToken: AppAccountToken) throws -> [(SubscriptionSnapshot, ConsentRestriction?)] {
        try subscriptions(appAccountToken: appAccountToken).map { ($0, try restriction(of: $0)) }
    }
}

/// Purchases inside a transaction.
package protocol SubscriptionTransaction {
    /// The snapshot as of this transaction (its own writes included).
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot?
    /// Inserts or replaces a snapshot.
    func save(_ snapshot: SubscriptionSnapshot) throws
    /// The snapshots whose ``SubscriptionSnapshot/nextBoundary`` is at or before `cutoff`
    /// (ms since 1970), earliest boundary first (then by originalTransactionId), at most
    /// `limit`: the purchases whose access time alone may have ended, for the expiry sweep.
    ///
    /// A store persists `nextBoundary` with every ``save(_:)`` (an indexed column, null when
    /// nil) so this never scans every purchase; a shared store (PostgreSQL) should lock the
    /// rows it returns (`FOR UPDATE SKIP LOCKED`) so two instances do not sweep one purchase.
    func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot]
}

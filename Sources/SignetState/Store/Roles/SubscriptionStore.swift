import AppStoreModels

/// Purchases: one snapshot each, found by originalTransactionId or appAccountToken (the
/// public queries of ``StateStore``), paged through, and the entitlement names every answer
/// carries.
package protocol SubscriptionStore: StateStore {
    /// Up to `limit` original transaction ids of stored purchases, in ascending order, after
    /// `after` (nil: from the first): `signet reconcile --all` pages through every purchase.
    func originalTransactionIds(after: String?, limit: Int) throws -> [String]

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

public import AppStoreModels

/// Where subscription state lives, as an embedding service sees it: the purchases and what
/// they entitle to.
///
/// Open one with ``SQLiteStateStore`` (the embedded default), ``InMemoryStateStore`` (tests)
/// or `PostgresStateStore` (SignetPostgres, shared by several instances), hand it to
/// ``StatePipeline/stages(verifier:store:options:)``, ask it with
/// ``entitlements(originalTransactionId:at:policy:)`` or
/// ``entitlements(appAccountToken:at:policy:)``, and ``close()`` it when done.
///
/// Only Signet's stores conform: behind this surface a store plays the roles the stages use
/// (dedupe keys, purchases, the event outbox, consent and refund questions, the forward
/// queue, all written in one transaction), which stay inside Signet so they can change
/// without breaking an embedder. Implementations serialise access themselves; every method
/// may be called from any thread.
public protocol StateStore: AnyObject, Sendable {
    /// The stored snapshot of one purchase; nil when the store has never seen it.
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot?
    /// The stored snapshots of every purchase carrying this appAccountToken.
    func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot]
    /// The consent restriction of one app transaction (RESCIND_CONSENT), in force or cleared;
    /// nil when none was ever recorded.
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction?
    /// Which entitlement names each product or subscription group grants, as stored; on every
    /// event and answer.
    var entitlementNames: EntitlementNames { get }

    /// Releases the store's resources.
    func close() throws

    /// This store's roles, for Signet's stages (opaque outside Signet, which is what keeps
    /// conformance to Signet's own stores).
    var roles: StateStoreRoles { get }
}

/// A Signet store's roles, opaque outside Signet: see ``StateStore/roles``.
public struct StateStoreRoles: Sendable {
    package let store: any StoreRoles

    package init(_ store: any StoreRoles) {
        self.store = store
    }
}

/// A store with every role the stages use:
///
/// | Role | Store | Inside a transaction |
/// |---|---|---|
/// | dedupe keys | `DedupeKeyStore` | `DedupeKeyTransaction` |
/// | purchases (snapshots, entitlement names) | `SubscriptionStore` | `SubscriptionTransaction` |
/// | the event outbox and history | `EventOutboxStore` | `EventOutboxTransaction` |
/// | consent and refund questions | `ConsumptionStore` | `ConsumptionTransaction` |
/// | retention answers and their outcomes | `RetentionOfferStore` | `RetentionOfferTransaction` |
/// | the forward sink's queue | `ForwardQueueStore` | |
/// | the App Store API's budget | `SharedRateBudget` (SignetCore; SQLite and PostgreSQL) | |
///
/// A component asks for the roles it uses, and a new kind of data is a new role (a protocol
/// in Roles/, one file per store kind) rather than an edit of every store. One transaction
/// spans every role (`TransactionalStore`): `transition` records a key, saves a purchase,
/// appends its events and stores a refund question atomically.
package protocol StoreRoles: StateStore, TransactionalStore, DedupeKeyStore, SubscriptionStore, EventOutboxStore,
    ConsumptionStore, RetentionOfferStore, SupportAuditStore, ForwardQueueStore
{
    /// Deletes dedupe keys seen before `keysBefore`, and outbox rows delivered longer ago
    /// than the store's outbox retention (as of `now`).
    func prune(keysBefore: Int64, now: Int64) throws
}

/// A store whose roles are written together in one atomic transaction.
package protocol TransactionalStore: AnyObject, Sendable {
    /// Runs `body` in one atomic transaction: everything it wrote is committed together
    /// when it returns, nothing when it throws.
    func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result
}

/// The operations available inside ``TransactionalStore/withTransaction(_:)``: every role's.
package protocol StateTransaction: DedupeKeyTransaction, SubscriptionTransaction, EventOutboxTransaction, ConsumptionTransaction,
    RetentionOfferTransaction {}

extension StateStore {
    /// What the purchase entitles to at `instant` (ms since 1970), under `policy`.
    public func entitlements(originalTransactionId: String, at instant: Int64, policy: TransitionPolicy = TransitionPolicy()) throws -> [Entitlement] {
        guard let snapshot = try subscription(originalTransactionId: originalTransactionId) else { return [] }
        return [Entitlement(snapshot, restriction: try restriction(of: snapshot), at: instant, policy: policy, names: entitlementNames)]
    }

    /// What every purchase of the account (appAccountToken) entitles to at `instant`.
    public func entitlements(appAccountToken: AppAccountToken, at instant: Int64, policy: TransitionPolicy = TransitionPolicy()) throws -> [Entitlement] {
        let names = entitlementNames
        return try subscriptions(appAccountToken: appAccountToken).map {
            Entitlement($0, restriction: try restriction(of: $0), at: instant, policy: policy, names: names)
        }
    }

    /// The consent restriction of the download `snapshot` was made in, nil when none was recorded.
    package func restriction(of snapshot: SubscriptionSnapshot) throws -> ConsentRestriction? {
        guard let appTransactionId = snapshot.appTransactionId else { return nil }
        return try consentRestriction(appTransactionId: appTransactionId)
    }
}

extension Entitlement {
    /// The answer for `snapshot` at `instant` under `policy`, `restricted` when `restriction`
    /// (its download's) is in force.
    package init(
        _ snapshot: SubscriptionSnapshot, restriction: ConsentRestriction?, at instant: Int64, policy: TransitionPolicy,
        names: EntitlementNames
    ) {
        // Never evaluate before the facts we have (a clock behind Apple's would undo state).
        let at = max(instant, snapshot.evaluatedAt)
        let (state, entitled) = SubscriptionStateMachine.derive(snapshot, at: at, policy: policy)
        self.init(snapshot: snapshot, state: state, entitled: entitled, evaluatedAt: at, names: names)
        // Consent withdrawn for the download this purchase was made in: the entitlement stays
        // as it is, and the answer says to restrict the child's access.
        restricted = restriction?.isInForce ?? false
    }
}

extension ConsumptionStore where Self: TransactionalStore {
    /// Clears the consent restriction of `appTransactionId` (the app's backend, through the
    /// entitlement API or `signet consent clear`): its purchases answer `restricted: false`
    /// again. Returns the restriction as cleared (or as it was, when already cleared); nil
    /// when none was ever recorded.
    package func clearConsentRestriction(appTransactionId: String, by who: String, at instant: Int64) throws -> ConsentRestriction? {
        try withTransaction { transaction in
            guard var restriction = try transaction.consentRestriction(appTransactionId: appTransactionId) else { return nil }
            guard restriction.isInForce else { return restriction }
            restriction.clearedAt = max(instant, restriction.rescindedAt)
            restriction.clearedBy = who
            try transaction.save(restriction)
            return restriction
        }
    }
}

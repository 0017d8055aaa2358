public import AppStoreModels

/// Where subscription state, dedupe keys, the event outbox and the queues beside them live.
///
/// A store plays several roles, one protocol each, so a component asks for the roles it
/// uses and a new kind of data is a new role (a protocol here, one file per store kind) rather
/// than an edit of every store:
///
/// | Role | Store | Inside a transaction |
/// |---|---|---|
/// | dedupe keys | ``DedupeKeyStore`` | ``DedupeKeyTransaction`` |
/// | purchases (snapshots, entitlement names) | ``SubscriptionStore`` | ``SubscriptionTransaction`` |
/// | the event outbox and history | ``EventOutboxStore`` | ``EventOutboxTransaction`` |
/// | consent and refund questions | ``ConsumptionStore`` | ``ConsumptionTransaction`` |
/// | the forward sink's queue | ``ForwardQueueStore`` | |
/// | the App Store API's budget | `SharedRateBudget` (SignetCore; SQLite and PostgreSQL) | |
///
/// One transaction spans every role (``TransactionalStore``): `transition` records a key,
/// saves a purchase, appends its events and stores a refund question atomically.
///
/// The embedded default is ``SQLiteStateStore``; ``InMemoryStateStore`` serves embedding
/// and tests; PostgreSQL (SignetPostgres) is shared by several instances. Implementations
/// serialise access themselves; every method may be called from any thread.
public protocol StateStore: TransactionalStore, DedupeKeyStore, SubscriptionStore, EventOutboxStore, ConsumptionStore,
    ForwardQueueStore
{
    /// Deletes dedupe keys seen before `keysBefore`, and outbox rows delivered longer ago
    /// than the store's outbox retention (as of `now`).
    func prune(keysBefore: Int64, now: Int64) throws

    /// Releases the store's resources.
    func close() throws
}

/// A store whose roles are written together in one atomic transaction.
public protocol TransactionalStore: AnyObject, Sendable {
    /// Runs `body` in one atomic transaction: everything it wrote is committed together
    /// when it returns, nothing when it throws.
    func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result
}

/// The operations available inside ``TransactionalStore/withTransaction(_:)``: every role's.
public protocol StateTransaction: DedupeKeyTransaction, SubscriptionTransaction, EventOutboxTransaction, ConsumptionTransaction {}

extension SubscriptionStore where Self: ConsumptionStore {
    /// What the purchase entitles to at `instant` (ms since 1970), under `policy`.
    public func entitlements(originalTransactionId: String, at instant: Int64, policy: TransitionPolicy = TransitionPolicy()) throws -> [Entitlement] {
        guard let snapshot = try subscription(originalTransactionId: originalTransactionId) else { return [] }
        return [try entitlement(snapshot, at: instant, policy: policy, names: entitlementNames)]
    }

    /// What every purchase of the account (appAccountToken) entitles to at `instant`.
    public func entitlements(appAccountToken: AppAccountToken, at instant: Int64, policy: TransitionPolicy = TransitionPolicy()) throws -> [Entitlement] {
        let names = entitlementNames
        return try subscriptions(appAccountToken: appAccountToken).map { try entitlement($0, at: instant, policy: policy, names: names) }
    }

    private func entitlement(
        _ snapshot: SubscriptionSnapshot, at instant: Int64, policy: TransitionPolicy, names: EntitlementNames
    ) throws -> Entitlement {
        // Never evaluate before the facts we have (a clock behind Apple's would undo state).
        let at = max(instant, snapshot.evaluatedAt)
        let (state, entitled) = SubscriptionStateMachine.derive(snapshot, at: at, policy: policy)
        var answer = Entitlement(snapshot: snapshot, state: state, entitled: entitled, evaluatedAt: at, names: names)
        // Consent withdrawn for the download this purchase was made in: the entitlement stays
        // as it is, and the answer says to restrict the child's access.
        if let appTransactionId = snapshot.appTransactionId {
            answer.restricted = try consentRestriction(appTransactionId: appTransactionId)?.isInForce ?? false
        }
        return answer
    }
}

extension ConsumptionStore where Self: TransactionalStore {
    /// Clears the consent restriction of `appTransactionId` (the app's backend, through the
    /// entitlement API or `signet consent clear`): its purchases answer `restricted: false`
    /// again. Returns the restriction as cleared (or as it was, when already cleared); nil
    /// when none was ever recorded.
    public func clearConsentRestriction(appTransactionId: String, by who: String, at instant: Int64) throws -> ConsentRestriction? {
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

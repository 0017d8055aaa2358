public import AppStoreModels

/// Where subscription state, dedupe keys and the event outbox live.
///
/// The embedded default is ``SQLiteStateStore``; ``InMemoryStateStore`` serves embedding
/// and tests. A shared server store (PostgreSQL) for several instances implements the
/// same protocol. Implementations serialise access themselves; every method may be
/// called from any thread.
public protocol StateStore: AnyObject, Sendable {
    /// Runs `body` in one atomic transaction: everything it wrote is committed together
    /// when it returns, nothing when it throws.
    func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result

    /// Which of `keys` were recorded (and not yet expired by retention) and are handled:
    /// their outbox rows were delivered, or are being delivered by this process. A key whose
    /// events another process committed but never delivered (it crashed) is not handled;
    /// `transition` redelivers those events.
    func containedKeys(_ keys: [String]) throws -> Set<String>
    /// Records dedupe keys on their own (the `dedupe` stage without `transition`).
    func recordKeys(_ keys: [String], seenAt: Int64) throws

    /// Outbox rows committed but never marked delivered, oldest first. The caller is
    /// expected to deliver them: from now on they count as in flight in this process.
    func undeliveredEvents() throws -> [OutboxEntry]
    /// Marks outbox rows delivered (after every sink acknowledged them).
    func markDelivered(_ sequences: [Int64], at: Int64) throws

    /// The stored snapshot of one purchase.
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot?
    /// The stored snapshots of every purchase carrying this appAccountToken.
    func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot]
    /// Up to `limit` original transaction ids of stored purchases, in ascending order, after
    /// `after` (nil: from the first): `signet reconcile --all` pages through every purchase.
    func originalTransactionIds(after: String?, limit: Int) throws -> [String]

    /// The events of one purchase still kept (undelivered ones, and delivered ones for the
    /// store's outbox retention), oldest first; the newest `limit` when there are more.
    func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry]

    /// Up to `limit` auto-renewable subscriptions, in ascending originalTransactionId after
    /// `after` (nil: from the first), whose period ended after `endedAfter` and at or before
    /// `endedBefore` (ms since 1970) although Signet expects them to renew: auto-renew on, no
    /// expiration intent, not in billing retry, not revoked, not migrated. Apple renewed them and the
    /// notification never came, or they lapsed unannounced: the purchases `appstore_reconcile`
    /// asks Apple about, paging with `after` past those it asked already.
    func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase]

    /// Which entitlement names each product or subscription group grants, as stored (what the
    /// store had at open, or the last ``replaceEntitlementNames(_:)``); on every event and answer.
    var entitlementNames: EntitlementNames { get }
    /// Stores `names` in place of the mapping kept so far (a pipeline's `entitlements:`,
    /// applied when its store opens), for this process and every later reader of the store.
    func replaceEntitlementNames(_ names: EntitlementNames) throws

    /// The consent restriction of one app transaction (RESCIND_CONSENT), in force or cleared.
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction?

    /// The refund questions (CONSUMPTION_REQUEST) signed at or after `requestedSince` (ms since
    /// 1970), oldest first, at most `limit`: `signet consumption requests` and the report.
    func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord]
    /// The consumption ledger's document under `key` (JSON), nil when none was recorded: the
    /// app's facts for answering refund questions, a customer's consent (``ConsumptionConsent``)
    /// or a transaction's usage (``ConsumptionUsage``); read them through their typed accessors.
    func consumptionLedgerEntry(_ key: String) throws -> String?

    /// Deletes dedupe keys seen before `keysBefore`, and outbox rows delivered longer ago
    /// than the store's outbox retention (as of `now`).
    func prune(keysBefore: Int64, now: Int64) throws

    /// Releases the store's resources.
    func close() throws

    // MARK: The forward sink's durable queue

    /// Queues every body for every target (one entry each), in one transaction, at `instant`
    /// (milliseconds since 1970), due at once.
    func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws
    /// Claims up to `limit` of `target`'s entries due at `now`, oldest first: each is not due
    /// again before `leaseUntil` (so a second claimer, or this one after a crash, retries it
    /// only once the lease ran out) and its attempts grow by one.
    func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem]
    /// Removes the entries `done` (delivered, or dead-lettered by the caller) and makes each of
    /// `retries` due again at its instant with its error.
    func settleForwards(done: [Int64], retries: [ForwardRetry]) throws
    /// How `target`'s entries stand.
    func forwardQueueStatus(target: String) throws -> ForwardQueueStatus
}

/// The operations available inside ``StateStore/withTransaction(_:)``.
public protocol StateTransaction {
    /// Announces, before anything else in the transaction, every dedupe key and purchase
    /// (originalTransactionId) a batch may read or write. A store may read them all at once
    /// instead of one round trip each, and a shared store locks the purchases here in one
    /// fixed order, so two instances whose batches overlap wait for each other instead of
    /// deadlocking. Optional: every other call stays correct for keys and purchases not
    /// announced. The default does nothing (an embedded store gains nothing from it).
    func prefetch(keys: [String], originalTransactionIds: [String]) throws
    /// Whether a dedupe key was recorded (committed earlier or in this transaction).
    func containsKey(_ key: String) throws -> Bool
    /// Records a dedupe key.
    func recordKey(_ key: String, seenAt: Int64) throws
    /// The snapshot as of this transaction (its own writes included).
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot?
    /// Inserts or replaces a snapshot.
    func save(_ snapshot: SubscriptionSnapshot) throws
    /// Appends an event to the outbox; returns its sequence number. `inputKey` is the dedupe
    /// key of the input that caused it.
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64
    /// Outbox rows caused by the input with this dedupe key that were never marked
    /// delivered and are not in flight in this process: another process committed them
    /// and died (or is still delivering them).
    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry]
    /// The snapshots whose ``SubscriptionSnapshot/nextBoundary`` is at or before `cutoff`
    /// (ms since 1970), earliest boundary first (then by originalTransactionId), at most
    /// `limit`: the purchases whose access time alone may have ended, for the expiry sweep.
    ///
    /// A store persists `nextBoundary` with every ``save(_:)`` (an indexed column, null when
    /// nil) so this never scans every purchase; a shared store (PostgreSQL) should lock the
    /// rows it returns (`FOR UPDATE SKIP LOCKED`) so two instances do not sweep one purchase.
    func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot]

    /// Announces the app transactions a batch's inputs name, before ``prefetch(keys:originalTransactionIds:)``
    /// and their ``consentRestriction(appTransactionId:)`` calls: a shared store reads them with
    /// the dedupe keys, in one round trip. Optional, like the prefetch.
    func prefetchConsentRestrictions(appTransactionIds: [String]) throws
    /// The consent restriction of one app transaction as of this transaction.
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction?
    /// Inserts or replaces a consent restriction.
    func save(_ restriction: ConsentRestriction) throws

    /// The refund questions kept for one transaction (any status), oldest first.
    func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord]
    /// Inserts or replaces a refund question (keyed by transactionId and requestedAt).
    func save(_ request: ConsumptionRequestRecord) throws
    /// The refund questions whose ``ConsumptionRequestRecord/dueAt`` is at or before `instant`,
    /// earliest first, at most `limit`: what the responder acts on. A shared store locks the
    /// rows it returns (`FOR UPDATE SKIP LOCKED`) so two instances never answer one request.
    func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord]
    /// The consumption ledger's document under `key` as of this transaction.
    func consumptionLedgerEntry(_ key: String) throws -> String?
    /// Inserts or replaces the consumption ledger's document under `key`.
    func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws
}

extension StateTransaction {
    public func prefetch(keys: [String], originalTransactionIds: [String]) throws {}
    public func prefetchConsentRestrictions(appTransactionIds: [String]) throws {}
}

/// One row of the transactional outbox: an event exactly as first serialised.
public struct OutboxEntry: Sendable, Hashable {
    /// Monotonic sequence number (delivery order).
    public var sequence: Int64
    public var eventId: String
    public var eventType: String
    /// The message key (the originalTransactionId).
    public var key: String
    public var environment: String?
    public var productId: String?
    /// The event JSON, byte for byte as first emitted.
    public var payload: [UInt8]
    /// The dedupe key of the input that caused the event.
    public var inputKey: String?
    /// When the event was committed (ms since 1970), where the store reads it back.
    public var createdAt: Int64?

    public init(
        sequence: Int64, eventId: String, eventType: String, key: String, environment: String?, productId: String?,
        payload: [UInt8], inputKey: String? = nil, createdAt: Int64? = nil
    ) {
        self.createdAt = createdAt
        self.sequence = sequence
        self.eventId = eventId
        self.eventType = eventType
        self.key = key
        self.environment = environment
        self.productId = productId
        self.payload = payload
        self.inputKey = inputKey
    }
}

extension StateStore {
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

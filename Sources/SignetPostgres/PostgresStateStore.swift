public import AppStoreModels
import Foundation
public import Logging
import NIOCore
import PostgresNIO
import SignetCore
public import SignetState
import Synchronization

/// A ``StateStore`` in PostgreSQL, shared by several Signet instances on several machines.
///
/// Same contract as ``SQLiteStateStore``: one transaction per batch holds its dedupe keys,
/// snapshots and outbox events; outbox rows are marked (or deleted) once the sinks
/// acknowledged them; retention prunes keys and delivered rows. Across instances:
/// snapshots are locked and compare-and-set on a version, dedupe keys are a primary key,
/// and each instance holds a lease (``PostgresLease``) on the outbox rows it emitted, so
/// another instance redelivers them only once the first is gone.
///
/// Faults: a batch whose transaction loses a race is rerun; one that cannot reach the
/// server is retried with capped exponential backoff for up to ``PostgresStoreOptions``'
/// `outageTimeout`, which blocks the calling stage thread and so pauses the pipeline. The
/// source is committed only after delivery, so no position passes what was stored.
/// Calls run on the sessions of a pool of `pool_size` connections (``PostgresSessionPool``),
/// one call per session at a time; see ``PostgresSession`` for why waiting is safe.
public final class PostgresStateStore: StateStore {
    public let options: PostgresStoreOptions
    /// This instance's id (`signet_instances.id`, `signet_outbox.owner`).
    public let instanceId: String
    /// The sessions of calls (the lease has its own connection).
    private let pool: PostgresSessionPool
    private let inFlight = InFlightSequences()
    /// The last outage error while a call is retrying one; nil once a call succeeds.
    /// Readiness (`containedKeys([])`) reports it without waiting for the server.
    private let outage = Mutex<PostgresStoreError?>(nil)
    private let lease: PostgresLease
    private let logger: Logger
    /// `signet_entitlement_names` as read at open, kept in step by ``replaceEntitlementNames(_:)``.
    private let names = Mutex(EntitlementNames.none)

    /// Connects, applies pending migrations (under an advisory lock) and takes a lease.
    ///
    /// A server that cannot be reached yet is waited for up to `outageTimeout`, as in the
    /// middle of a run: a service started with (or just before) its database comes up.
    public init(options: PostgresStoreOptions, logger: Logger = Logger(label: "signet.postgres")) throws {
        self.options = options
        self.logger = logger
        instanceId = UUID().uuidString.lowercased()
        pool = PostgresSessionPool(size: options.poolSize, options: options, applicationName: "signet", logger: logger)
        lease = PostgresLease(instanceId: instanceId, options: options, logger: logger)
        if !options.readOnly {
            try withSession("start") { session in _ = try PostgresMigrations.apply(on: session) }
            try lease.start()
        }
        let stored = try withSession("entitlement names", waitingOutOutages: false) { session in
            if options.readOnly { try PostgresMigrations.checkCurrent(on: session) }
            return try session.query("SELECT entitlement, granted_by FROM signet_entitlement_names")
                .map { try $0.decode((String, String).self) }.map { (entitlement: $0.0, identifier: $0.1) }
        }
        names.withLock { $0 = EntitlementNames(pairs: stored) }
    }

    public func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
        try withSession("stale purchases", waitingOutOutages: false) { session in
            // Keyset paging: the same order in the condition and the sort, so a page continues
            // exactly where the last ended.
            try session.query("""
                SELECT original_transaction_id, GREATEST(expires_date, renewal_date), environment FROM signet_subscriptions
                WHERE product_type = 'Auto-Renewable Subscription' AND auto_renew AND expiration_intent IS NULL
                  AND NOT COALESCE(billing_retry, false) AND revocation_date IS NULL AND migrated_to_original_transaction_id IS NULL
                  AND GREATEST(expires_date, renewal_date) > \(endedAfter) AND GREATEST(expires_date, renewal_date) <= \(endedBefore)
                  AND original_transaction_id > \(after ?? "")
                ORDER BY original_transaction_id LIMIT \(Int64(max(0, limit)))
                """).map { row in
                    let (id, end, environment) = try row.decode((String, Int64, String?).self)
                    return StalePurchase(originalTransactionId: id, periodEnd: end, environment: environment)
                }
        }
    }

    public func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
        try withSession("history lookup", waitingOutOutages: false) { session in
            let rows = try session.query("""
                SELECT seq, created_at, delivered_at, payload FROM signet_outbox
                WHERE message_key = \(originalTransactionId) ORDER BY seq DESC LIMIT \(Int64(max(0, limit)))
                """)
            return try rows.reversed().map { row in
                let (sequence, createdAt, deliveredAt, payload) = try row.decode((Int64, Int64, Int64?, ByteBuffer).self)
                return EventHistoryEntry(
                    sequence: sequence, createdAt: createdAt, deliveredAt: deliveredAt, payload: Array(payload.readableBytesView))
            }
        }
    }

    public var entitlementNames: EntitlementNames { names.withLock { $0 } }

    public func replaceEntitlementNames(_ replacement: EntitlementNames) throws {
        guard replacement != entitlementNames else { return }
        let pairs = replacement.pairs
        try withSession("entitlement names") { session in
            try session.execute("BEGIN")
            do {
                // Instances starting together replace the rows one after the other.
                try session.query("SELECT pg_advisory_xact_lock(\(PostgresMigrations.lockKey + 1))")
                try session.execute("DELETE FROM signet_entitlement_names")
                try session.query(PostgresQuery(
                    unsafeSQL: "INSERT INTO signet_entitlement_names (entitlement, granted_by) SELECT * FROM unnest($1::text[], $2::text[])",
                    binds: Self.binds(pairs.map(\.entitlement), pairs.map(\.identifier))))
                try session.execute("COMMIT")
            } catch {
                _ = try? session.execute("ROLLBACK")
                throw error
            }
        }
        names.withLock { $0 = replacement }
    }

    /// A store for queries only (no migrations, no lease), failing fast when unreachable.
    public static func openReadOnly(url: String) throws -> PostgresStateStore {
        var options = PostgresStoreOptions(url: try PostgresURL(url))
        options.readOnly = true
        options.outageTimeout = .zero
        return try PostgresStateStore(options: options)
    }

    /// Applies pending migrations without opening a store (`signet migrate`); returns them.
    public static func migrate(options: PostgresStoreOptions, logger: Logger = Logger(label: "signet.postgres")) throws -> [Int] {
        let session = PostgresSession(options: options, applicationName: "signet-migrate", logger: logger)
        defer { session.drop() }
        return try PostgresMigrations.apply(on: session)
    }

    /// Runs `body` with a session of the pool, retrying conflicts and outages with backoff.
    ///
    /// - Parameter waitingOutOutages: false for lookups that answer someone now (the
    ///   entitlement API, `signet state show`): during an outage they fail at once instead
    ///   of holding their caller for up to `outage_timeout`.
    func withSession<Result>(
        _ what: String, waitingOutOutages: Bool = true, _ body: (PostgresSession) throws -> Result
    ) throws -> Result {
        let deadline = ContinuousClock.now + (waitingOutOutages ? options.outageTimeout : .zero)
        var backoff = Duration.milliseconds(50)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let result = try pool.withSession(body)
                outage.withLock { $0 = nil }
                return result
            } catch let error as PostgresStoreError where error.isConflict || error.isUnavailable {
                if error.isUnavailable { outage.withLock { $0 = error } }
                guard ContinuousClock.now + backoff < deadline, !error.isStoreClosed else { throw error }
                if error.isConflict {
                    logger.debug("\(what): conflict with another instance, retrying (attempt \(attempt))")
                } else {
                    logger.warning("\(what): PostgreSQL unavailable (attempt \(attempt)), retrying in \(backoff): \(error)")
                }
                Thread.sleep(forTimeInterval: Double(backoff.clampedMilliseconds) / 1000)
                backoff = error.isConflict ? min(backoff * 2, .milliseconds(500)) : min(backoff * 2, .seconds(5))
            }
        }
    }

    public func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
        try withSession("batch") { session in
            let transaction = PostgresStateTransaction(session: session, instanceId: instanceId, inFlight: inFlight)
            try session.execute("BEGIN")
            let result: Result
            var announced = false
            do {
                result = try body(transaction)
                try transaction.flush()
                // In flight before the commit shows the rows to this instance's other
                // sessions, so none of them takes them for undelivered and delivers them too.
                inFlight.insert(transaction.claimed)
                announced = true
                try session.execute("COMMIT")
            } catch {
                _ = try? session.execute("ROLLBACK")
                if announced { inFlight.remove(transaction.claimed) }
                throw error
            }
            return result
        }
    }

    /// With no keys: throws the current outage, if a call is retrying one (readiness false
    /// while the pipeline is paused), without touching the server.
    public func containedKeys(_ keys: [String]) throws -> Set<String> {
        guard !keys.isEmpty else {
            if let error = outage.withLock({ $0 }) { throw error }
            return []
        }
        return try withSession("dedupe lookup") { session in
            let rows = try session.query("""
                SELECT k.key, o.seq FROM signet_dedupe_keys k
                LEFT JOIN signet_outbox o ON o.input_key = k.key AND o.delivered_at IS NULL
                WHERE k.key = ANY(\(keys))
                """)
            var found: Set<String> = []
            var unhandled: Set<String> = []
            for row in rows {
                let (key, sequence) = try row.decode((String, Int64?).self)
                found.insert(key)
                // Undelivered and not in flight here: `transition` decides (it waits for a live
                // owner, or redelivers a gone one's rows), so the input is not dropped here.
                if let sequence, !inFlight.contains(sequence) { unhandled.insert(key) }
            }
            return found.subtracting(unhandled)
        }
    }

    public func recordKeys(_ keys: [String], seenAt: Int64) throws {
        guard !keys.isEmpty else { return }
        _ = try withSession("record keys") { session in
            try session.query("""
                INSERT INTO signet_dedupe_keys (key, seen_at) SELECT unnest(\(keys)::text[]), \(seenAt)
                ON CONFLICT DO NOTHING
                """)
        }
    }

    public func undeliveredEvents() throws -> [OutboxEntry] {
        try withSession("outbox redelivery") { session in
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                UPDATE signet_outbox o SET owner = $1
                WHERE o.delivered_at IS NULL AND NOT \(PostgresSchema.ownedByAnotherLiveInstance)
                RETURNING \(PostgresSchema.aliasedOutboxColumns)
                """, binds: Self.binds(instanceId)))
            let entries = try rows.map(PostgresSchema.outboxEntry(from:)).sorted { $0.sequence < $1.sequence }
            inFlight.insert(entries.map(\.sequence))
            return entries
        }
    }

    public func markDelivered(_ sequences: [Int64], at instant: Int64) throws {
        guard !sequences.isEmpty else { return }
        let deleting = options.outboxRetention <= .zero
        try withSession("delivery mark") { session in
            if deleting {
                try session.query("DELETE FROM signet_outbox WHERE seq = ANY(\(sequences))")
            } else {
                try session.query(
                    "UPDATE signet_outbox SET delivered_at = \(instant) WHERE seq = ANY(\(sequences)) AND delivered_at IS NULL")
            }
            inFlight.remove(sequences)
        }
    }

    public func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        try withSession("subscription lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions WHERE original_transaction_id = $1",
                binds: Self.binds(originalTransactionId)))
            return try rows.first.map { try PostgresSchema.snapshot(from: $0).0 }
        }
    }

    public func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        try withSession("consent restriction lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: PostgresSchema.selectConsentRestriction,
                binds: Self.binds(appTransactionId)))
            return try rows.first.map { try PostgresSchema.consentRestriction(from: $0) }
        }
    }

    public func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
        guard !bodies.isEmpty, !targets.isEmpty else { return }
        let encoded = bodies.map { Data($0).base64EncodedString() }
        try withSession("forward enqueue") { session in
            // One statement, so all or none; ids ascend body by body, target by target.
            _ = try session.query("""
                INSERT INTO signet_forward_queue (target, body, enqueued_at, due_at)
                SELECT t.target, decode(b.body, 'base64'), \(instant), \(instant)
                FROM unnest(\(encoded)::text[]) WITH ORDINALITY AS b(body, n)
                CROSS JOIN unnest(\(targets)::text[]) WITH ORDINALITY AS t(target, m)
                ORDER BY b.n, t.m
                """)
        }
    }

    public func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
        let limit = Int64(max(0, limit))
        return try withSession("forward claim") { session in
            // SKIP LOCKED: instances claiming at the same moment take different entries.
            let rows = try session.query("""
                UPDATE signet_forward_queue q SET due_at = \(leaseUntil), attempts = q.attempts + 1
                FROM (SELECT id FROM signet_forward_queue WHERE target = \(target) AND due_at <= \(now)
                      ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED) c
                WHERE q.id = c.id
                RETURNING q.id, q.body, q.enqueued_at, q.attempts, q.last_error
                """)
            return try rows.map { row in
                let (id, body, enqueuedAt, attempts, lastError) = try row.decode((Int64, ByteBuffer, Int64, Int32, String?).self)
                return ForwardQueueItem(
                    id: id, target: target, body: Array(body.readableBytesView), enqueuedAt: enqueuedAt, attempts: Int(attempts),
                    lastError: lastError)
            }.sorted { $0.id < $1.id }
        }
    }

    public func settleForwards(done: [Int64], retries: [ForwardRetry]) throws {
        guard !done.isEmpty || !retries.isEmpty else { return }
        try withSession("forward settlement") { session in
            if !done.isEmpty { try session.query("DELETE FROM signet_forward_queue WHERE id = ANY(\(done))") }
            guard !retries.isEmpty else { return }
            let (ids, instants, errors) = (retries.map(\.id), retries.map(\.at), retries.map(\.error))
            try session.query("""
                UPDATE signet_forward_queue q SET due_at = v.at, last_error = v.error
                FROM unnest(\(ids)::bigint[], \(instants)::bigint[], \(errors)::text[]) AS v(id, at, error)
                WHERE q.id = v.id
                """)
        }
    }

    public func forwardQueueStatus(target: String) throws -> ForwardQueueStatus {
        try withSession("forward queue status", waitingOutOutages: false) { session in
            let rows = try session.query(
                "SELECT count(*), min(enqueued_at), min(due_at) FROM signet_forward_queue WHERE target = \(target)")
            guard let row = rows.first else { return ForwardQueueStatus(pending: 0, oldestEnqueuedAt: nil, nextDueAt: nil) }
            let (count, oldest, next) = try row.decode((Int64, Int64?, Int64?).self)
            return ForwardQueueStatus(pending: Int(count), oldestEnqueuedAt: oldest, nextDueAt: next)
        }
    }

    public func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        try withSession("refund question listing", waitingOutOutages: false) { session in
            var binds = PostgresBindings()
            binds.append(requestedSince)
            binds.append(Int64(max(0, limit)))
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_consumption_requests WHERE requested_at >= $1
                ORDER BY requested_at, transaction_id LIMIT $2
                """, binds: binds))
            return try PostgresSchema.records(ConsumptionRequestRecord.self, from: rows)
        }
    }

    public func consumptionLedgerEntry(_ key: String) throws -> String? {
        try withSession("consumption ledger lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT record::text FROM signet_consumption_ledger WHERE key = $1", binds: Self.binds(key)))
            return try rows.first?.decode(String.self)
        }
    }

    public func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] {
        try withSession("account lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: """
                    SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions
                    WHERE app_account_token = $1 ORDER BY original_transaction_id
                    """,
                binds: Self.binds(appAccountToken.description)))
            return try rows.map { try PostgresSchema.snapshot(from: $0).0 }
        }
    }

    public func originalTransactionIds(after: String?, limit: Int) throws -> [String] {
        try withSession("purchase listing", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: """
                    SELECT original_transaction_id FROM signet_subscriptions
                    WHERE original_transaction_id > $1 ORDER BY original_transaction_id LIMIT $2
                    """,
                binds: {
                    var binds = PostgresBindings()
                    binds.append(after ?? "")
                    binds.append(Int64(max(0, limit)))
                    return binds
                }()))
            return try rows.map { try $0.decode(String.self) }
        }
    }

    public func prune(keysBefore: Int64, now: Int64) throws {
        let deliveredBefore = now - options.outboxRetention.clampedMilliseconds
        let pruneEvents = options.outboxRetention > .zero
        try withSession("prune") { session in
            // Bounded chunks keep one prune from stalling a batch.
            try session.query("""
                DELETE FROM signet_dedupe_keys WHERE key IN (
                    SELECT key FROM signet_dedupe_keys WHERE seen_at < \(keysBefore) LIMIT 20000)
                """)
            if pruneEvents {
                try session.query(
                    "DELETE FROM signet_outbox WHERE delivered_at IS NOT NULL AND delivered_at < \(deliveredBefore)")
            }
            _ = try session.query("DELETE FROM signet_instances WHERE lease_expires_at < now() - interval '1 day'")
        }
    }

    /// A store dropped without ``close()`` still gives its connections and lease back.
    deinit {
        lease.stop()
        pool.close()
    }

    public func close() throws {
        lease.stop()
        pool.close()
    }

    private static func binds(_ first: String, _ rest: [String]? = nil) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(first)
        if let rest { binds.append(rest) }
        return binds
    }

    private static func binds(_ first: [String], _ second: [String]) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(first)
        binds.append(second)
        return binds
    }
}

import Foundation
import NIOCore
import PostgresNIO
import SignetCore
import SignetState

/// The operations of one PostgreSQL transaction of ``PostgresStateStore``.
///
/// Round trips, not rows, are what a batch costs here, so reads come in bulk
/// (``prefetch(keys:originalTransactionIds:)``) and writes are queued and sent by
/// ``flush()`` just before the commit: about ten statements per batch (BEGIN and COMMIT
/// included), whatever its size.
///
/// Concurrency between instances: a snapshot is read `FOR UPDATE` (the row stays locked
/// until commit) and written back with compare-and-set on its `version`; a purchase no
/// row exists for yet is inserted only if no other instance inserted it meanwhile. A
/// dedupe key is inserted only if absent. Any of these losing a race throws a conflict
/// (as does PostgreSQL's deadlock detection, for a caller that does not prefetch), and the
/// store reruns the whole batch in a new transaction, which then sees the winner's commit.
final class PostgresStateTransaction: StateTransaction {
    let session: PostgresSession
    let instanceId: String
    /// Outbox rows this process emitted and the sinks have not acknowledged yet.
    let inFlight: InFlightSequences
    /// Versions read (0: no row existed) per purchase, for compare-and-set.
    var versions: [String: Int64] = [:]
    var written: [String: SubscriptionSnapshot] = [:]
    var recorded: Set<String> = []
    /// Recorded in this transaction and not yet inserted (see ``flush()``).
    var pendingKeys: [String] = []
    var pendingSeenAt: [Int64] = []
    /// Announced by ``prefetch(keys:originalTransactionIds:)``: the keys looked up, and which
    /// of them were recorded when the transaction started.
    var prefetchedKeys: Set<String> = []
    var knownKeys: Set<String> = []
    /// Purchases read (and locked) by the prefetch; nil: no row existed.
    var prefetched: [String: SubscriptionSnapshot?] = [:]
    /// Consent restrictions read by the prefetch or written here; nil: none recorded.
    var restrictions: [String: ConsentRestriction?] = [:]
    /// App transactions announced by ``prefetchConsentRestrictions(appTransactionIds:)``, read
    /// with the dedupe keys in ``prefetch(keys:originalTransactionIds:)`` (one round trip for both).
    var announcedAppTransactions: [String] = []
    /// Outbox rows queued by ``appendEvent(_:payload:inputKey:createdAt:)`` (JSON objects).
    var pendingEvents: [[UInt8]] = []
    /// Retention outcomes queued by ``settleRetentionOffers(originalTransactionId:outcome:)``.
    var pendingOutcomes: [(originalTransactionId: String, outcome: RetentionOutcome)] = []
    /// Sequence numbers reserved for this transaction's outbox rows, last one next.
    var reservedSequences: [Int64] = []
    /// Outbox rows this transaction added or claimed (in flight from just before its commit).
    var claimed: [Int64] = []

    /// The first key of the purchases' advisory locks ("SIGP"), apart from the one-key
    /// lock of the migrations.
    static let purchaseLockSpace: Int32 = 0x5349_4750

    init(session: PostgresSession, instanceId: String, inFlight: InFlightSequences) {
        self.session = session
        self.instanceId = instanceId
        self.inFlight = inFlight
    }

    /// Writes what the batch queued, just before the commit, in at most five statements:
    /// dedupe keys, updated purchases, new purchases, outbox rows, retention outcomes. A key or new purchase
    /// another instance inserted meanwhile, or a purchase whose version moved, reruns the batch.
    func flush() throws {
        try flushKeys()
        try flushSubscriptions()
        try flushEvents()
        try flushRetentionOutcomes()
    }

    /// Inserts the queued dedupe keys, each only if absent. One already there means another
    /// instance recorded it since this batch looked: the batch is rerun (it is a duplicate now).
    private func flushKeys() throws {
        guard !pendingKeys.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(pendingKeys)
        binds.append(pendingSeenAt)
        let inserted = try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_dedupe_keys (key, seen_at) SELECT * FROM unnest($1::text[], $2::bigint[])
            ON CONFLICT DO NOTHING RETURNING 1
            """, binds: binds))
        defer {
            pendingKeys = []
            pendingSeenAt = []
        }
        if inserted.count < pendingKeys.count {
            throw PostgresStoreError("dedupe key recorded concurrently", sqlState: "23505")
        }
    }

    /// Which of `keys` are recorded and the restrictions of `appTransactionIds`, in one query.
    func readKeysAndRestrictions(keys: [String], appTransactionIds ids: [String]) throws {
        var binds = PostgresBindings()
        binds.append(keys)
        binds.append(ids)
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            SELECT NULL::text, key, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::text
            FROM signet_dedupe_keys WHERE key = ANY($1)
            UNION ALL
            SELECT 'consent', \(PostgresSchema.consentRestrictionColumns)
            FROM signet_consent_restrictions WHERE app_transaction_id = ANY($2)
            """, binds: binds))
        prefetchedKeys.formUnion(keys)
        for id in ids { restrictions[id] = .some(nil) }
        for row in rows {
            let cells = PostgresRandomAccessRow(row)
            if try cells[0].decode(String?.self) == nil {
                knownKeys.insert(try cells[1].decode(String.self))
            } else {
                let restriction = try PostgresSchema.consentRestriction(from: row, startingAt: 1)
                restrictions[restriction.appTransactionId] = restriction
            }
        }
    }

    private func flushSubscriptions() throws {
        guard !written.isEmpty else { return }
        var updates = JSONText(), inserts = JSONText()
        updates.beginArray()
        inserts.beginArray()
        var updateCount = 0, insertCount = 0
        for (id, snapshot) in written.sorted(by: { $0.key < $1.key }) {
            let expected = versions[id] ?? 0
            if expected == 0 {
                PostgresSchema.appendJSON(snapshot, expected: 0, to: &inserts)
                insertCount += 1
            } else {
                PostgresSchema.appendJSON(snapshot, expected: expected, to: &updates)
                updateCount += 1
            }
        }
        updates.endArray()
        inserts.endArray()
        let fields = PostgresSchema.subscriptionFieldNames
        let record = "jsonb_to_recordset($1::jsonb) AS v(\(PostgresSchema.subscriptionRecordType), expected bigint)"
        if updateCount > 0 {
            let assigned = fields.dropFirst()
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                UPDATE signet_subscriptions s SET (\(assigned.joined(separator: ", "))) = (\(assigned.map { "v." + $0 }.joined(separator: ", "))),
                    version = s.version + 1, updated_at = now()
                FROM \(record)
                WHERE s.original_transaction_id = v.original_transaction_id AND s.version = v.expected
                RETURNING 1
                """, binds: PostgresSchema.jsonBinds(updates)))
            if rows.count < updateCount { throw PostgresStoreError("a subscription changed concurrently", sqlState: "40001") }
        }
        if insertCount > 0 {
            let columns = fields.joined(separator: ", ")
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                INSERT INTO signet_subscriptions (\(columns)) SELECT \(columns) FROM \(record)
                ON CONFLICT DO NOTHING RETURNING 1
                """, binds: PostgresSchema.jsonBinds(inserts)))
            if rows.count < insertCount { throw PostgresStoreError("a subscription was inserted concurrently", sqlState: "40001") }
        }
    }

    private func flushEvents() throws {
        guard !pendingEvents.isEmpty else { return }
        var binds = PostgresSchema.recordset(pendingEvents) { rows, event in rows.raw(event) }
        binds.append(instanceId)
        try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_outbox (seq, event_id, event_type, message_key, environment, product_id, payload, created_at, input_key, owner)
            SELECT seq, event_id, event_type, message_key, environment, product_id, decode(payload, 'base64'), created_at, input_key, $2
            FROM jsonb_to_recordset($1::jsonb) AS v(seq bigint, event_id text, event_type text, message_key text,
                environment text, product_id text, payload text, created_at bigint, input_key text)
            """, binds: binds))
        pendingEvents = []
    }

    func binds(_ values: String...) -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        return binds
    }
}

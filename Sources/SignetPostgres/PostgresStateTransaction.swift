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
    private let session: PostgresSession
    private let instanceId: String
    /// Outbox rows this process emitted and the sinks have not acknowledged yet.
    private let inFlight: InFlightSequences
    /// Versions read (0: no row existed) per purchase, for compare-and-set.
    private var versions: [String: Int64] = [:]
    private var written: [String: SubscriptionSnapshot] = [:]
    private var recorded: Set<String> = []
    /// Recorded in this transaction and not yet inserted (see ``flush()``).
    private var pendingKeys: [String] = []
    private var pendingSeenAt: [Int64] = []
    /// Announced by ``prefetch(keys:originalTransactionIds:)``: the keys looked up, and which
    /// of them were recorded when the transaction started.
    private var prefetchedKeys: Set<String> = []
    private var knownKeys: Set<String> = []
    /// Purchases read (and locked) by the prefetch; nil: no row existed.
    private var prefetched: [String: SubscriptionSnapshot?] = [:]
    /// Consent restrictions read by the prefetch or written here; nil: none recorded.
    private var restrictions: [String: ConsentRestriction?] = [:]
    /// App transactions announced by ``prefetchConsentRestrictions(appTransactionIds:)``, read
    /// with the dedupe keys in ``prefetch(keys:originalTransactionIds:)`` (one round trip for both).
    private var announcedAppTransactions: [String] = []
    /// Outbox rows queued by ``appendEvent(_:payload:inputKey:createdAt:)`` (JSON objects).
    private var pendingEvents: [[UInt8]] = []
    /// Sequence numbers reserved for this transaction's outbox rows, last one next.
    private var reservedSequences: [Int64] = []
    /// Outbox rows this transaction added or claimed (in flight from just before its commit).
    private(set) var claimed: [Int64] = []

    /// The first key of the purchases' advisory locks ("SIGP"), apart from the one-key
    /// lock of the migrations.
    static let purchaseLockSpace: Int32 = 0x5349_4750

    init(session: PostgresSession, instanceId: String, inFlight: InFlightSequences) {
        self.session = session
        self.instanceId = instanceId
        self.inFlight = inFlight
    }

    /// Three round trips for the whole batch instead of two per record.
    ///
    /// Instances with overlapping batches queue instead of deadlocking: each purchase gets
    /// a transaction-scoped advisory lock, taken in one global order (by hash) before any
    /// row is touched. Row locks alone would not do: a purchase with no row yet has nothing
    /// to lock, and two batches inserting the same two new purchases in opposite orders
    /// deadlock on the unique index. A key another instance records after this read is
    /// still caught: ``recordKey(_:seenAt:)`` inserts only if absent, else reruns the batch.
    func prefetch(keys: [String], originalTransactionIds: [String]) throws {
        let newKeys = Array(Set(keys).subtracting(prefetchedKeys))
        let apps = Array(Set(announcedAppTransactions).subtracting(restrictions.keys))
        announcedAppTransactions = []
        if !newKeys.isEmpty || !apps.isEmpty {
            try readKeysAndRestrictions(keys: newKeys, appTransactionIds: apps)
        }
        let ids = Set(originalTransactionIds).subtracting(prefetched.keys).subtracting(written.keys).sorted()
        guard !ids.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(ids)
        try session.query(PostgresQuery(unsafeSQL: """
            SELECT pg_advisory_xact_lock(\(Self.purchaseLockSpace), k) FROM (
                SELECT DISTINCT hashtext(id) AS k FROM unnest($1::text[]) AS id ORDER BY k) AS sorted
            """, binds: binds))
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions
            WHERE original_transaction_id = ANY($1) ORDER BY original_transaction_id FOR UPDATE
            """, binds: binds))
        for id in ids { prefetched[id] = .some(nil) }
        for row in rows {
            let (snapshot, version) = try PostgresSchema.snapshot(from: row)
            prefetched[snapshot.originalTransactionId] = snapshot
            versions[snapshot.originalTransactionId] = version
        }
        for id in ids where versions[id] == nil { versions[id] = 0 }
    }

    func containsKey(_ key: String) throws -> Bool {
        if recorded.contains(key) { return true }
        if prefetchedKeys.contains(key) { return knownKeys.contains(key) }
        return try !session.query("SELECT 1 FROM signet_dedupe_keys WHERE key = \(key)").isEmpty
    }

    /// Queued and inserted in one statement by ``flush()`` before the commit: the answer
    /// (another instance recorded it meanwhile) only matters for the batch as a whole.
    func recordKey(_ key: String, seenAt: Int64) throws {
        guard !recorded.contains(key) else { return }
        pendingKeys.append(key)
        pendingSeenAt.append(seenAt)
        recorded.insert(key)
    }

    /// Writes what the batch queued, just before the commit, in at most four statements:
    /// dedupe keys, updated purchases, new purchases, outbox rows. A key or new purchase
    /// another instance inserted meanwhile, or a purchase whose version moved, reruns the batch.
    func flush() throws {
        try flushKeys()
        try flushSubscriptions()
        try flushEvents()
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

    /// Remembered for ``prefetch(keys:originalTransactionIds:)``, which reads them in the same
    /// round trip as the dedupe keys (announce them first); a later announcement reads at once.
    func prefetchConsentRestrictions(appTransactionIds: [String]) throws {
        guard !prefetchedKeys.isEmpty else {
            announcedAppTransactions += appTransactionIds
            return
        }
        let ids = Array(Set(appTransactionIds).subtracting(restrictions.keys))
        if !ids.isEmpty { try readKeysAndRestrictions(keys: [], appTransactionIds: ids) }
    }

    /// Which of `keys` are recorded and the restrictions of `appTransactionIds`, in one query.
    private func readKeysAndRestrictions(keys: [String], appTransactionIds ids: [String]) throws {
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

    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        if let known = restrictions[appTransactionId] { return known }
        let rows = try session.query(PostgresQuery(
            unsafeSQL: PostgresSchema.selectConsentRestriction,
            binds: binds(appTransactionId)))
        let restriction = try rows.first.map { try PostgresSchema.consentRestriction(from: $0) }
        restrictions[appTransactionId] = .some(restriction)
        return restriction
    }

    /// Written at once (rare: one per RESCIND_CONSENT or clearing), not queued for ``flush()``.
    func save(_ restriction: ConsentRestriction) throws {
        var binds = PostgresBindings()
        binds.append(restriction.appTransactionId)
        binds.append(restriction.bundleId)
        binds.append(restriction.environment)
        binds.append(restriction.rescindedAt)
        binds.append(restriction.notificationUUID)
        binds.append(restriction.clearedAt)
        binds.append(restriction.clearedBy)
        try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_consent_restrictions (\(PostgresSchema.consentRestrictionColumns))
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (app_transaction_id) DO UPDATE SET bundle_id = excluded.bundle_id, environment = excluded.environment,
                rescinded_at = excluded.rescinded_at, notification_uuid = excluded.notification_uuid,
                cleared_at = excluded.cleared_at, cleared_by = excluded.cleared_by
            """, binds: binds))
        restrictions[restriction.appTransactionId] = .some(restriction)
    }

    /// Locked (`FOR UPDATE`): the responder of another instance updates these rows too.
    func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord] {
        let rows = try session.query(PostgresQuery(
            unsafeSQL: "SELECT record::text FROM signet_consumption_requests WHERE transaction_id = $1 ORDER BY requested_at FOR UPDATE",
            binds: binds(transactionId)))
        return try PostgresSchema.records(ConsumptionRequestRecord.self, from: rows)
    }

    /// Written at once (rare: one per refund question or answer), not queued for ``flush()``.
    func save(_ request: ConsumptionRequestRecord) throws {
        var binds = PostgresBindings()
        binds.append(request.transactionId)
        binds.append(request.requestedAt)
        binds.append(request.status.rawValue)
        binds.append(request.dueAt)
        binds.append(try ConsumptionRecordCoding.encode(request))
        try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_consumption_requests (transaction_id, requested_at, status, due_at, record)
            VALUES ($1, $2, $3, $4, $5::jsonb)
            ON CONFLICT (transaction_id, requested_at) DO UPDATE SET status = excluded.status, due_at = excluded.due_at,
                record = excluded.record
            """, binds: binds))
    }

    /// SKIP LOCKED: a request another instance is answering is left to it.
    func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        guard limit > 0 else { return [] }
        var binds = PostgresBindings()
        binds.append(instant)
        binds.append(Int64(limit))
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            SELECT record::text FROM signet_consumption_requests WHERE due_at IS NOT NULL AND due_at <= $1
            ORDER BY due_at, transaction_id LIMIT $2 FOR UPDATE SKIP LOCKED
            """, binds: binds))
        return try PostgresSchema.records(ConsumptionRequestRecord.self, from: rows)
    }

    func consumptionLedgerEntry(_ key: String) throws -> String? {
        let rows = try session.query(PostgresQuery(
            unsafeSQL: "SELECT record::text FROM signet_consumption_ledger WHERE key = $1 FOR UPDATE", binds: binds(key)))
        return try rows.first?.decode(String.self)
    }

    func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws {
        try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_consumption_ledger (key, record) VALUES ($1, $2::jsonb)
            ON CONFLICT (key) DO UPDATE SET record = excluded.record
            """, binds: binds(key, document)))
    }

    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        if let pending = written[originalTransactionId] { return pending }
        if let read = prefetched[originalTransactionId] { return read }
        let rows = try session.query(PostgresQuery(
            unsafeSQL: "SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions WHERE original_transaction_id = $1 FOR UPDATE",
            binds: binds(originalTransactionId)))
        guard let row = rows.first else {
            versions[originalTransactionId] = 0
            return nil
        }
        let (snapshot, version) = try PostgresSchema.snapshot(from: row)
        versions[originalTransactionId] = version
        return snapshot
    }

    /// Kept until ``flush()``, which writes every purchase of the batch in one statement.
    /// The row is read (and locked) first when it was not yet, for its version.
    func save(_ snapshot: SubscriptionSnapshot) throws {
        let id = snapshot.originalTransactionId
        if versions[id] == nil { _ = try subscription(originalTransactionId: id) }
        written[id] = snapshot
    }

    /// Takes a sequence number from a block reserved in advance and queues the row for
    /// ``flush()``: one statement per batch instead of one per event.
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        if reservedSequences.isEmpty {
            let count = max(32, 2 * prefetchedKeys.count - pendingEvents.count)
            let rows = try session.query("""
                SELECT nextval(pg_get_serial_sequence('signet_outbox', 'seq')) FROM generate_series(1, \(count))
                """)
            reservedSequences = try rows.map { try $0.decode(Int64.self) }.reversed()
        }
        guard let sequence = reservedSequences.popLast() else {
            throw PostgresStoreError("no outbox sequence number was reserved")
        }
        var json = JSONText(reserving: payload.count * 4 / 3 + 256)
        json.beginObject()
        json.field("seq", sequence)
        json.field("event_id", event.eventId)
        json.field("event_type", event.type.rawValue)
        json.field("message_key", event.messageKey)
        json.field("environment", event.environment)
        json.field("product_id", event.productId)
        json.field("payload", Data(payload).base64EncodedString())
        json.field("created_at", createdAt)
        json.field("input_key", inputKey)
        json.endObject()
        pendingEvents.append(json.bytes)
        claimed.append(sequence)
        return sequence
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
                """, binds: Self.jsonBinds(updates)))
            if rows.count < updateCount { throw PostgresStoreError("a subscription changed concurrently", sqlState: "40001") }
        }
        if insertCount > 0 {
            let columns = fields.joined(separator: ", ")
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                INSERT INTO signet_subscriptions (\(columns)) SELECT \(columns) FROM \(record)
                ON CONFLICT DO NOTHING RETURNING 1
                """, binds: Self.jsonBinds(inserts)))
            if rows.count < insertCount { throw PostgresStoreError("a subscription was inserted concurrently", sqlState: "40001") }
        }
    }

    private func flushEvents() throws {
        guard !pendingEvents.isEmpty else { return }
        var rows = JSONText()
        rows.beginArray()
        for event in pendingEvents { rows.raw(event) }
        rows.endArray()
        var binds = Self.jsonBinds(rows)
        binds.append(instanceId)
        try session.query(PostgresQuery(unsafeSQL: """
            INSERT INTO signet_outbox (seq, event_id, event_type, message_key, environment, product_id, payload, created_at, input_key, owner)
            SELECT seq, event_id, event_type, message_key, environment, product_id, decode(payload, 'base64'), created_at, input_key, $2
            FROM jsonb_to_recordset($1::jsonb) AS v(seq bigint, event_id text, event_type text, message_key text,
                environment text, product_id text, payload text, created_at bigint, input_key text)
            """, binds: binds))
        pendingEvents = []
    }

    private static func jsonBinds(_ json: JSONText) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(String(decoding: json.bytes, as: UTF8.self))
        return binds
    }

    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] {
        // Rows of a live instance stay with it: wait (rerun the batch) until it delivered them
        // or its lease expired. Rows of a gone instance (or our own from before a lost commit
        // acknowledgement) are claimed by this instance and redelivered.
        let owners = try session.query(PostgresQuery(unsafeSQL: """
            SELECT 1 FROM signet_outbox o
            WHERE o.input_key = $2 AND o.delivered_at IS NULL AND \(PostgresSchema.ownedByAnotherLiveInstance) LIMIT 1
            """, binds: binds(instanceId, inputKey)))
        if !owners.isEmpty {
            throw PostgresStoreError("another live instance is delivering the events of this input", sqlState: "55P03")
        }
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            UPDATE signet_outbox o SET owner = $1
            WHERE o.input_key = $2 AND o.delivered_at IS NULL AND NOT \(PostgresSchema.ownedByAnotherLiveInstance)
            RETURNING \(PostgresSchema.aliasedOutboxColumns)
            """, binds: binds(instanceId, inputKey)))
        let entries = try rows.map(PostgresSchema.outboxEntry(from:))
            .filter { !inFlight.contains($0.sequence) }
            .sorted { $0.sequence < $1.sequence }
        claimed.append(contentsOf: entries.map(\.sequence))
        return entries
    }

    func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot] {
        guard limit > 0 else { return [] }
        // SKIP LOCKED: a purchase another instance is sweeping (or a batch is updating) is left
        // to it; the rows stay locked until this transaction ends, so its `save` cannot conflict.
        var binds = PostgresBindings()
        binds.append(cutoff)
        binds.append(Int64(limit))
        let rows = try session.query(PostgresQuery(unsafeSQL: """
            SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions
            WHERE next_boundary IS NOT NULL AND next_boundary <= $1
            ORDER BY next_boundary, original_transaction_id LIMIT $2 FOR UPDATE SKIP LOCKED
            """, binds: binds))
        return try rows.map { row in
            let (snapshot, version) = try PostgresSchema.snapshot(from: row)
            versions[snapshot.originalTransactionId] = version
            return snapshot
        }
    }

    private func binds(_ values: String...) -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        return binds
    }
}

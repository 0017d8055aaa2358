import Foundation
import NIOCore
import PostgresNIO
import SignetState

/// The operations of one PostgreSQL transaction of ``PostgresStateStore``.
///
/// Concurrency between instances: a snapshot is read `FOR UPDATE` (the row stays locked
/// until commit) and written back with compare-and-set on its `version`; a purchase no
/// row exists for yet is inserted only if no other instance inserted it meanwhile. A
/// dedupe key is inserted only if absent. Any of these losing a race throws a conflict
/// (as does PostgreSQL's deadlock detection when two batches lock rows in opposite
/// orders), and the store reruns the whole batch in a new transaction, which then sees
/// the winner's commit.
final class PostgresStateTransaction: StateTransaction {
    private let session: PostgresSession
    private let instanceId: String
    /// Outbox rows this process emitted and the sinks have not acknowledged yet.
    private let inFlight: Set<Int64>
    /// Versions read (0: no row existed) per purchase, for compare-and-set.
    private var versions: [String: Int64] = [:]
    private var written: [String: SubscriptionSnapshot] = [:]
    private var recorded: Set<String> = []
    /// Announced by ``prefetch(keys:originalTransactionIds:)``: the keys looked up, and which
    /// of them were recorded when the transaction started.
    private var prefetchedKeys: Set<String> = []
    private var knownKeys: Set<String> = []
    /// Purchases read (and locked) by the prefetch; nil: no row existed.
    private var prefetched: [String: SubscriptionSnapshot?] = [:]
    /// Outbox rows this transaction added or claimed (in flight once it commits).
    private(set) var claimed: [Int64] = []

    /// The first key of the purchases' advisory locks ("SIGP"), apart from the one-key
    /// lock of the migrations.
    static let purchaseLockSpace: Int32 = 0x5349_4750

    init(session: PostgresSession, instanceId: String, inFlight: Set<Int64>) {
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
        if !newKeys.isEmpty {
            for row in try session.query("SELECT key FROM signet_dedupe_keys WHERE key = ANY(\(newKeys))") {
                knownKeys.insert(try row.decode(String.self))
            }
            prefetchedKeys.formUnion(newKeys)
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

    func recordKey(_ key: String, seenAt: Int64) throws {
        guard !recorded.contains(key) else { return }
        let inserted = try session.query(
            "INSERT INTO signet_dedupe_keys (key, seen_at) VALUES (\(key), \(seenAt)) ON CONFLICT DO NOTHING RETURNING 1")
        // Another instance recorded it since we looked: rerun the batch (it is a duplicate now).
        if inserted.isEmpty { throw PostgresStoreError("dedupe key recorded concurrently", sqlState: "23505") }
        recorded.insert(key)
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

    func save(_ snapshot: SubscriptionSnapshot) throws {
        let id = snapshot.originalTransactionId
        if versions[id] == nil { _ = try subscription(originalTransactionId: id) }
        let expected = versions[id] ?? 0
        var binds = PostgresBindings()
        PostgresSchema.bind(snapshot, to: &binds)
        let columns = PostgresSchema.subscriptionColumns.replacingOccurrences(of: ", version", with: "")
        let sql: String
        if expected == 0 {
            sql = "INSERT INTO signet_subscriptions (\(columns)) VALUES (\(PostgresSchema.placeholders(PostgresSchema.boundColumns))) "
                + "ON CONFLICT DO NOTHING RETURNING version"
        } else {
            let assignments = columns.split(separator: ",").enumerated().dropFirst().map { index, column in
                "\(column.trimmingCharacters(in: .whitespacesAndNewlines)) = $\(index + 1)"
            }.joined(separator: ", ")
            binds.append(expected)
            sql = "UPDATE signet_subscriptions SET \(assignments), version = version + 1, updated_at = now() "
                + "WHERE original_transaction_id = $1 AND version = $\(PostgresSchema.boundColumns + 1) RETURNING version"
        }
        let rows = try session.query(PostgresQuery(unsafeSQL: sql, binds: binds))
        guard let row = rows.first, let version = try? row.decode(Int64.self) else {
            throw PostgresStoreError("subscription \(id) changed concurrently", sqlState: "40001")
        }
        versions[id] = version
        written[id] = snapshot
    }

    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        let rows = try session.query("""
            INSERT INTO signet_outbox (event_id, event_type, message_key, environment, product_id, payload, created_at, input_key, owner)
            VALUES (\(event.eventId), \(event.type.rawValue), \(event.originalTransactionId ?? ""), \(event.environment),
                    \(event.productId), \(ByteBuffer(bytes: payload)), \(createdAt), \(inputKey), \(instanceId))
            RETURNING seq
            """)
        guard let sequence = try rows.first?.decode(Int64.self) else {
            throw PostgresStoreError("the outbox insert returned no sequence")
        }
        claimed.append(sequence)
        return sequence
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
            RETURNING \(PostgresSchema.outboxColumns.split(separator: ",").map { "o." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
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

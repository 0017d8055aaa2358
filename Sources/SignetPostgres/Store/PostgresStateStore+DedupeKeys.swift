import AppStoreModels
import Foundation
import NIOCore
import PostgresNIO
import SignetCore
import SignetState
import Synchronization

// PostgresStateStore: dedupe keys (DedupeKeyStore, DedupeKeyTransaction).

/// The ``DedupeKeyStore`` role.
extension PostgresStateStore {
    /// With no keys: throws the current outage, if a call is retrying one (readiness false
    /// while the pipeline is paused), without touching the server.
    package func containedKeys(_ keys: [String]) throws -> Set<String> {
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

    package func recordKeys(_ keys: [String], seenAt: Int64) throws {
        guard !keys.isEmpty else { return }
        _ = try withSession("record keys") { session in
            try session.query("""
                INSERT INTO signet_dedupe_keys (key, seen_at) SELECT unnest(\(keys)::text[]), \(seenAt)
                ON CONFLICT DO NOTHING
                """)
        }
    }
}

extension PostgresStateTransaction: DedupeKeyTransaction {
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
}

public import AppStoreModels
import Foundation
import NIOCore
import PostgresNIO
import SignetCore
public import SignetState
import Synchronization

// PostgresStateStore: purchases (SubscriptionStore, SubscriptionTransaction).

/// The ``SubscriptionStore`` role.
extension PostgresStateStore {
    public func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        try withSession("subscription lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions WHERE original_transaction_id = $1",
                binds: Self.binds(originalTransactionId)))
            return try rows.first.map { try PostgresSchema.snapshot(from: $0).0 }
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

    package func subscriptionWithConsent(originalTransactionId: String) throws -> (SubscriptionSnapshot, ConsentRestriction?)? {
        try withSession("entitlement lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: PostgresSchema.selectSubscriptionsWithConsent + " WHERE s.original_transaction_id = $1",
                binds: Self.binds(originalTransactionId)))
            return try rows.first.map { try PostgresSchema.snapshotWithConsent(from: $0) }
        }
    }

    package func subscriptionsWithConsent(appAccountToken: AppAccountToken) throws -> [(SubscriptionSnapshot, ConsentRestriction?)] {
        try withSession("account entitlement lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: PostgresSchema.selectSubscriptionsWithConsent
                    + " WHERE s.app_account_token = $1 ORDER BY s.original_transaction_id",
                binds: Self.binds(appAccountToken.description)))
            return try rows.map { try PostgresSchema.snapshotWithConsent(from: $0) }
        }
    }

    package func subscriptions(appTransactionId: String) throws -> [SubscriptionSnapshot] {
        try withSession("app transaction lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: """
                    SELECT \(PostgresSchema.subscriptionColumns) FROM signet_subscriptions
                    WHERE app_transaction_id = $1 ORDER BY original_transaction_id
                    """,
                binds: Self.binds(appTransactionId)))
            return try rows.map { try PostgresSchema.snapshot(from: $0).0 }
        }
    }

    package func originalTransactionIds(after: String?, limit: Int) throws -> [String] {
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

    package func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
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

    public var entitlementNames: EntitlementNames { names.withLock { $0 } }

    package func replaceEntitlementNames(_ replacement: EntitlementNames) throws {
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
}

extension PostgresStateTransaction: SubscriptionTransaction {
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
}

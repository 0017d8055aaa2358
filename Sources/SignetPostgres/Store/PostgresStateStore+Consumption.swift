import AppStoreModels
import Foundation
import NIOCore
import PostgresNIO
import SignetCore
public import SignetState
import Synchronization

// PostgresStateStore: consent and refund questions (ConsumptionStore, ConsumptionTransaction).

/// The ``ConsumptionStore`` role.
extension PostgresStateStore {
    public func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        try withSession("consent restriction lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: PostgresSchema.selectConsentRestriction,
                binds: Self.binds(appTransactionId)))
            return try rows.first.map { try PostgresSchema.consentRestriction(from: $0) }
        }
    }

    package func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
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

    package func consumptionRequests(originalTransactionId: String, limit: Int) throws -> [ConsumptionRequestRecord] {
        try withSession("refund questions of a purchase", waitingOutOutages: false) { session in
            var binds = PostgresBindings()
            binds.append(originalTransactionId)
            binds.append(Int64(max(0, limit)))
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_consumption_requests WHERE record->>'originalTransactionId' = $1
                ORDER BY requested_at, transaction_id LIMIT $2
                """, binds: binds))
            return try PostgresSchema.records(ConsumptionRequestRecord.self, from: rows)
        }
    }

    package func consumptionLedgerEntry(_ key: String) throws -> String? {
        try withSession("consumption ledger lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT record::text FROM signet_consumption_ledger WHERE key = $1", binds: Self.binds(key)))
            return try rows.first?.decode(String.self)
        }
    }
}

extension PostgresStateTransaction: ConsumptionTransaction {
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
}

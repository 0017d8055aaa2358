import PostgresNIO
import SignetCore
package import SignetState

// PostgresStateStore: the support audit log (SupportAuditStore).

/// The ``SupportAuditStore`` role: one JSONB document per action, beside the columns it is
/// looked up by; every instance and operator shares it.
extension PostgresStateStore {
    /// One statement: inserted unless the request identifier is kept (another operator's, a
    /// retried form), and the standing record returned either way.
    package func beginSupportAction(_ record: SupportActionRecord) throws -> SupportActionRecord {
        var binds = Self.binds(record.requestIdentifier)
        binds.append(record.originalTransactionId)
        binds.append(record.at)
        binds.append(try ConsumptionRecordCoding.encode(record))
        return try withSession("support action record") { session in
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                WITH inserted AS (
                    INSERT INTO signet_support_audit (request_id, original_transaction_id, at, record) VALUES ($1, $2, $3, $4::jsonb)
                    ON CONFLICT (request_id) DO NOTHING RETURNING record
                )
                SELECT record::text FROM inserted
                UNION ALL SELECT record::text FROM signet_support_audit WHERE request_id = $1
                LIMIT 1
                """, binds: binds))
            return try PostgresSchema.records(SupportActionRecord.self, from: rows).first ?? record
        }
    }

    package func finishSupportAction(_ record: SupportActionRecord) throws {
        var binds = Self.binds(record.requestIdentifier)
        binds.append(try ConsumptionRecordCoding.encode(record))
        try withSession("support action answer") { session in
            try session.query(PostgresQuery(
                unsafeSQL: "UPDATE signet_support_audit SET record = $2::jsonb WHERE request_id = $1", binds: binds))
        }
    }

    package func supportAction(requestIdentifier: String) throws -> SupportActionRecord? {
        try withSession("support action lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT record::text FROM signet_support_audit WHERE request_id = $1", binds: Self.binds(requestIdentifier)))
            return try PostgresSchema.records(SupportActionRecord.self, from: rows).first
        }
    }

    package func supportActions(originalTransactionId: String) throws -> [SupportActionRecord] {
        try withSession("support actions of a purchase", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_support_audit WHERE original_transaction_id = $1 ORDER BY at, request_id
                """, binds: Self.binds(originalTransactionId)))
            return try PostgresSchema.records(SupportActionRecord.self, from: rows)
        }
    }

    package func supportActions(since: Int64, limit: Int) throws -> [SupportActionRecord] {
        try withSession("support action listing", waitingOutOutages: false) { session in
            var binds = PostgresBindings()
            binds.append(since)
            binds.append(Int64(max(0, limit)))
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_support_audit WHERE at >= $1 ORDER BY at, request_id LIMIT $2
                """, binds: binds))
            return try PostgresSchema.records(SupportActionRecord.self, from: rows)
        }
    }
}

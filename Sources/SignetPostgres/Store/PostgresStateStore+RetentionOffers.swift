import PostgresNIO
import SignetCore
package import SignetState

// PostgresStateStore: retention answers and their outcomes (RetentionOfferStore, RetentionOfferTransaction).

/// The ``RetentionOfferStore`` role: one JSONB document per answer, beside the columns it is
/// looked up by. Reads do not wait out an outage: the retention responder answers the
/// default rather than keep Apple waiting.
extension PostgresStateStore {
    package func retentionOffer(requestIdentifier: String) throws -> RetentionOfferRecord? {
        try withSession("retention answer lookup", waitingOutOutages: false) { session in
            let rows = try session.query(PostgresQuery(
                unsafeSQL: "SELECT record::text FROM signet_retention_offers WHERE request_id = $1", binds: Self.binds(requestIdentifier)))
            return try PostgresSchema.records(RetentionOfferRecord.self, from: rows).first
        }
    }

    package func retentionOffers(originalTransactionId: String, answeredSince: Int64) throws -> [RetentionOfferRecord] {
        try withSession("retention answers of a purchase", waitingOutOutages: false) { session in
            var binds = Self.binds(originalTransactionId)
            binds.append(answeredSince)
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_retention_offers WHERE original_transaction_id = $1 AND answered_at >= $2
                ORDER BY answered_at, request_id
                """, binds: binds))
            return try PostgresSchema.records(RetentionOfferRecord.self, from: rows)
        }
    }

    /// One statement for the batch: each inserted unless its request has an answer (another
    /// instance's, when Apple's repeated request raced the first).
    package func recordRetentionOffers(_ records: [RetentionOfferRecord]) throws {
        guard !records.isEmpty else { return }
        let binds = try PostgresSchema.recordset(records) { row, record in
            row.beginObject()
            row.field("request_id", record.requestIdentifier)
            row.field("original_transaction_id", record.originalTransactionId)
            row.field("answered_at", record.answeredAt)
            row.key("record")
            row.raw(Array(try ConsumptionRecordCoding.encode(record).utf8))
            row.endObject()
        }
        try withSession("retention answer record", waitingOutOutages: false) { session in
            try session.query(PostgresQuery(unsafeSQL: """
                INSERT INTO signet_retention_offers (request_id, original_transaction_id, answered_at, record)
                SELECT request_id, original_transaction_id, answered_at, record
                FROM jsonb_to_recordset($1::jsonb) AS v(request_id text, original_transaction_id text, answered_at bigint, record jsonb)
                ON CONFLICT (request_id) DO NOTHING
                """, binds: binds))
        }
    }

    package func pruneRetentionOffers(answeredBefore: Int64, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        return try withSession("retention answer pruning", waitingOutOutages: false) { session in
            var binds = PostgresBindings()
            binds.append(answeredBefore)
            binds.append(Int64(limit))
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                DELETE FROM signet_retention_offers WHERE request_id IN (
                    SELECT request_id FROM signet_retention_offers WHERE answered_at < $1 ORDER BY answered_at LIMIT $2)
                RETURNING 1
                """, binds: binds))
            return rows.count
        }
    }

    package func retentionOffers(answeredSince: Int64, limit: Int) throws -> [RetentionOfferRecord] {
        try withSession("retention answer listing", waitingOutOutages: false) { session in
            var binds = PostgresBindings()
            binds.append(answeredSince)
            binds.append(Int64(max(0, limit)))
            let rows = try session.query(PostgresQuery(unsafeSQL: """
                SELECT record::text FROM signet_retention_offers WHERE answered_at >= $1 ORDER BY answered_at, request_id LIMIT $2
                """, binds: binds))
            return try PostgresSchema.records(RetentionOfferRecord.self, from: rows)
        }
    }
}

extension PostgresStateTransaction: RetentionOfferTransaction {
    /// Queued for ``flush()``: a batch of renewals costs one statement, not one per notification.
    func settleRetentionOffers(originalTransactionId: String, outcome: RetentionOutcome) throws {
        pendingOutcomes.append((originalTransactionId, outcome))
    }

    /// One UPDATE for the batch's outcomes: each answer takes the earliest outcome signed at or
    /// after it (and before any it has), as one notification at a time would have given it.
    func flushRetentionOutcomes() throws {
        guard !pendingOutcomes.isEmpty else { return }
        let binds = try PostgresSchema.recordset(pendingOutcomes) { row, pending in
            row.beginObject()
            row.field("id", pending.originalTransactionId)
            row.field("at", pending.outcome.signedAt)
            row.key("outcome")
            row.raw(Array(try ConsumptionRecordCoding.encode(pending.outcome).utf8))
            row.endObject()
        }
        try session.query(PostgresQuery(unsafeSQL: """
            UPDATE signet_retention_offers o SET outcome_at = d.at, record = jsonb_set(o.record, '{outcome}', d.outcome)
            FROM (
                SELECT DISTINCT ON (r.request_id) r.request_id, v.at, v.outcome
                FROM signet_retention_offers r
                JOIN jsonb_to_recordset($1::jsonb) AS v(id text, at bigint, outcome jsonb)
                    ON r.original_transaction_id = v.id AND r.answered_at <= v.at AND (r.outcome_at IS NULL OR r.outcome_at > v.at)
                ORDER BY r.request_id, v.at
            ) d
            WHERE o.request_id = d.request_id
            """, binds: binds))
        pendingOutcomes = []
    }
}

// SQLiteStateStore: retention answers and their outcomes (RetentionOfferStore, RetentionOfferTransaction).

/// The ``RetentionOfferStore`` role: one JSON document per answer, beside the columns it is
/// looked up by (as refund questions are kept).
extension SQLiteStateStore {
    package func retentionOffer(requestIdentifier: String) throws -> RetentionOfferRecord? {
        guard hasRetentionOffers else { return nil }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectRetentionOffer)
            defer { statement.reset() }
            try statement.bind(1, requestIdentifier)
            return try SQLiteStateTransaction.records(RetentionOfferRecord.self, from: statement).first
        }
    }

    package func retentionOffers(originalTransactionId: String, answeredSince: Int64) throws -> [RetentionOfferRecord] {
        guard hasRetentionOffers else { return [] }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectRetentionOffersOfPurchase)
            defer { statement.reset() }
            try statement.bind(1, originalTransactionId)
            try statement.bind(2, answeredSince)
            return try SQLiteStateTransaction.records(RetentionOfferRecord.self, from: statement)
        }
    }

    /// One transaction for the batch (one commit, however many answers).
    package func recordRetentionOffers(_ records: [RetentionOfferRecord]) throws {
        guard !records.isEmpty else { return }
        let documents = try records.map { try ConsumptionRecordCoding.encode($0) }
        try withConnection { connection in
            try connection.database.transaction {
                let insert = try connection.database.statement(SQLiteSchema.insertRetentionOffer)
                for (record, document) in zip(records, documents) {
                    try insert.bind(1, record.requestIdentifier)
                    try insert.bind(2, record.originalTransactionId)
                    try insert.bind(3, record.answeredAt)
                    try insert.bind(4, document)
                    try insert.run()
                }
            }
        }
    }

    package func pruneRetentionOffers(answeredBefore: Int64, limit: Int) throws -> Int {
        guard hasRetentionOffers, limit > 0 else { return 0 }
        return try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.pruneRetentionOffers)
            try statement.bind(1, answeredBefore)
            try statement.bind(2, Int64(limit))
            try statement.run()
            return connection.database.changes
        }
    }

    package func retentionOffers(answeredSince: Int64, limit: Int) throws -> [RetentionOfferRecord] {
        guard hasRetentionOffers else { return [] }
        return try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectRetentionOffersSince)
            defer { statement.reset() }
            try statement.bind(1, answeredSince)
            try statement.bind(2, Int64(max(0, limit)))
            return try SQLiteStateTransaction.records(RetentionOfferRecord.self, from: statement)
        }
    }
}

extension SQLiteStateTransaction: RetentionOfferTransaction {
    func settleRetentionOffers(originalTransactionId: String, outcome: RetentionOutcome) throws {
        let statement = try database.statement(SQLiteSchema.settleRetentionOffers)
        try statement.bind(1, originalTransactionId)
        try statement.bind(2, outcome.signedAt)
        try statement.bind(3, try ConsumptionRecordCoding.encode(outcome))
        try statement.run()
    }
}

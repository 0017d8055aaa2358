// SQLiteStateStore: the support audit log (SupportAuditStore).

/// The ``SupportAuditStore`` role: one JSON document per action, beside the columns it is
/// looked up by (as retention answers are kept).
extension SQLiteStateStore {
    package func beginSupportAction(_ record: SupportActionRecord) throws -> SupportActionRecord {
        let document = try ConsumptionRecordCoding.encode(record)
        return try withConnection { connection in
            try connection.database.transaction {
                let insert = try connection.database.statement(SQLiteSchema.insertSupportAction)
                try insert.bind(1, record.requestIdentifier)
                try insert.bind(2, record.originalTransactionId)
                try insert.bind(3, record.at)
                try insert.bind(4, document)
                try insert.run()
                let select = try connection.database.statement(SQLiteSchema.selectSupportAction)
                defer { select.reset() }
                try select.bind(1, record.requestIdentifier)
                return try SQLiteStateTransaction.records(SupportActionRecord.self, from: select).first ?? record
            }
        }
    }

    package func finishSupportAction(_ record: SupportActionRecord) throws {
        let document = try ConsumptionRecordCoding.encode(record)
        try withConnection { connection in
            let update = try connection.database.statement(SQLiteSchema.updateSupportAction)
            try update.bind(1, record.requestIdentifier)
            try update.bind(2, document)
            try update.run()
        }
    }

    package func supportAction(requestIdentifier: String) throws -> SupportActionRecord? {
        guard hasSupportAudit else { return nil }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectSupportAction)
            defer { statement.reset() }
            try statement.bind(1, requestIdentifier)
            return try SQLiteStateTransaction.records(SupportActionRecord.self, from: statement).first
        }
    }

    package func supportActions(originalTransactionId: String) throws -> [SupportActionRecord] {
        guard hasSupportAudit else { return [] }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectSupportActionsOfPurchase)
            defer { statement.reset() }
            try statement.bind(1, originalTransactionId)
            return try SQLiteStateTransaction.records(SupportActionRecord.self, from: statement)
        }
    }

    package func supportActions(since: Int64, limit: Int) throws -> [SupportActionRecord] {
        guard hasSupportAudit else { return [] }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectSupportActionsSince)
            defer { statement.reset() }
            try statement.bind(1, since)
            try statement.bind(2, Int64(max(0, limit)))
            return try SQLiteStateTransaction.records(SupportActionRecord.self, from: statement)
        }
    }
}

import AppStoreModels
import Foundation
import SignetCore
import Synchronization

// SQLiteStateStore: consent and refund questions (ConsumptionStore, ConsumptionTransaction).

/// The ``ConsumptionStore`` role.
extension SQLiteStateStore {
    public func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        guard hasConsentRestrictions else { return nil }
        return try withReader { database in
            try SQLiteStateTransaction(database: database, cache: nil, inFlight: [])
                .consentRestriction(appTransactionId: appTransactionId)
        }
    }

    package func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        guard hasConsumptionTables else { return [] }
        return try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectConsumptionRequestsSince)
            defer { statement.reset() }
            try statement.bind(1, requestedSince)
            try statement.bind(2, Int64(max(0, limit)))
            return try SQLiteStateTransaction.records(ConsumptionRequestRecord.self, from: statement)
        }
    }

    package func consumptionRequests(originalTransactionId: String, limit: Int) throws -> [ConsumptionRequestRecord] {
        guard hasConsumptionTables else { return [] }
        return try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectConsumptionRequestsOfPurchase)
            defer { statement.reset() }
            try statement.bind(1, originalTransactionId)
            try statement.bind(2, Int64(max(0, limit)))
            return try SQLiteStateTransaction.records(ConsumptionRequestRecord.self, from: statement)
        }
    }

    package func consumptionLedgerEntry(_ key: String) throws -> String? {
        guard hasConsumptionTables else { return nil }
        return try withConnection { connection in
            try SQLiteStateTransaction(database: connection.database, cache: nil, inFlight: []).consumptionLedgerEntry(key)
        }
    }
}

extension SQLiteStateTransaction: ConsumptionTransaction {
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        let statement = try database.statement(SQLiteSchema.selectConsentRestriction)
        defer { statement.reset() }
        try statement.bind(1, appTransactionId)
        guard try statement.step() else { return nil }
        return ConsentRestriction(
            appTransactionId: statement.string(0) ?? appTransactionId, bundleId: statement.string(1), environment: statement.string(2),
            rescindedAt: statement.int64(3) ?? 0, notificationUUID: statement.string(4), clearedAt: statement.int64(5),
            clearedBy: statement.string(6))
    }

    func save(_ restriction: ConsentRestriction) throws {
        let statement = try database.statement(SQLiteSchema.upsertConsentRestriction)
        try statement.bind(1, restriction.appTransactionId)
        try statement.bind(2, restriction.bundleId)
        try statement.bind(3, restriction.environment)
        try statement.bind(4, restriction.rescindedAt)
        try statement.bind(5, restriction.notificationUUID)
        try statement.bind(6, restriction.clearedAt)
        try statement.bind(7, restriction.clearedBy)
        try statement.run()
    }

    func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord] {
        let statement = try database.statement(SQLiteSchema.selectConsumptionRequests)
        defer { statement.reset() }
        try statement.bind(1, transactionId)
        return try Self.records(ConsumptionRequestRecord.self, from: statement)
    }

    func save(_ request: ConsumptionRequestRecord) throws {
        let statement = try database.statement(SQLiteSchema.upsertConsumptionRequest)
        try statement.bind(1, request.transactionId)
        try statement.bind(2, request.requestedAt)
        try statement.bind(3, request.dueAt)
        try statement.bind(4, try ConsumptionRecordCoding.encode(request))
        try statement.run()
    }

    func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        let statement = try database.statement(SQLiteSchema.selectConsumptionRequestsDue)
        defer { statement.reset() }
        try statement.bind(1, instant)
        try statement.bind(2, Int64(max(0, limit)))
        return try Self.records(ConsumptionRequestRecord.self, from: statement)
    }

    func consumptionLedgerEntry(_ key: String) throws -> String? {
        let statement = try database.statement(SQLiteSchema.selectConsumptionLedgerEntry)
        defer { statement.reset() }
        try statement.bind(1, key)
        return try statement.step() ? statement.string(0) : nil
    }

    func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws {
        let statement = try database.statement(SQLiteSchema.upsertConsumptionLedgerEntry)
        try statement.bind(1, key)
        try statement.bind(2, document)
        try statement.run()
    }
}

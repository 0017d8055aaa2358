public import AppStoreModels
import Foundation
import SignetCore
import Synchronization

// SQLiteStateStore: purchases (SubscriptionStore, SubscriptionTransaction).

/// The ``SubscriptionStore`` role.
extension SQLiteStateStore {
    public func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        try withReader { database in
            try SQLiteStateTransaction(database: database, cache: nil, inFlight: [])
                .subscription(originalTransactionId: originalTransactionId)
        }
    }

    public func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] {
        try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectByToken)
            defer { statement.reset() }
            try statement.bind(1, appAccountToken.description)
            var snapshots: [SubscriptionSnapshot] = []
            while try statement.step() { snapshots.append(SQLiteSchema.snapshot(from: statement)) }
            return snapshots
        }
    }

    package func subscriptions(appTransactionId: String) throws -> [SubscriptionSnapshot] {
        try withReader { database in
            let statement = try database.statement(SQLiteSchema.selectByAppTransaction)
            defer { statement.reset() }
            try statement.bind(1, appTransactionId)
            var snapshots: [SubscriptionSnapshot] = []
            while try statement.step() { snapshots.append(SQLiteSchema.snapshot(from: statement)) }
            return snapshots
        }
    }

    package func originalTransactionIds(after: String?, limit: Int) throws -> [String] {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectIdsAfter)
            defer { statement.reset() }
            try statement.bind(1, after ?? "")
            try statement.bind(2, Int64(max(0, limit)))
            var ids: [String] = []
            while try statement.step() { if let id = statement.string(0) { ids.append(id) } }
            return ids
        }
    }

    package func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectStale)
            defer { statement.reset() }
            try statement.bind(1, endedAfter)
            try statement.bind(2, endedBefore)
            // Every text sorts after the empty one.
            try statement.bind(3, after ?? "")
            try statement.bind(4, Int64(max(0, limit)))
            var stale: [StalePurchase] = []
            while try statement.step() {
                if let id = statement.string(0), let end = statement.int64(1) {
                    stale.append(StalePurchase(originalTransactionId: id, periodEnd: end, environment: statement.string(2)))
                }
            }
            return stale
        }
    }

    public var entitlementNames: EntitlementNames { names.withLock { $0 } }

    package func replaceEntitlementNames(_ replacement: EntitlementNames) throws {
        try withConnection { connection in
            guard replacement != names.withLock({ $0 }) else { return }
            try connection.database.transaction {
                try connection.database.statement(SQLiteSchema.deleteEntitlementNames).run()
                let insert = try connection.database.statement(SQLiteSchema.insertEntitlementName)
                for (name, identifier) in replacement.pairs {
                    try insert.bind(1, name)
                    try insert.bind(2, identifier)
                    try insert.run()
                }
            }
            names.withLock { $0 = replacement }
        }
    }
}

extension SQLiteStateTransaction: SubscriptionTransaction {
    func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        // The cache holds only snapshots saved through it, which the database holds as written
        // (a rollback empties it).
        if let cache, let hit = cache.get(originalTransactionId) {
            indexedColumns[originalTransactionId] = IndexedColumns(hit)
            return hit
        }
        let statement = try database.statement(SQLiteSchema.selectSubscription)
        defer { statement.reset() }
        try statement.bind(1, originalTransactionId)
        guard try statement.step() else {
            indexedColumns[originalTransactionId] = .some(nil)
            return nil
        }
        indexedColumns[originalTransactionId] = IndexedColumns(row: statement)
        return SQLiteSchema.snapshot(from: statement)
    }

    func save(_ snapshot: SubscriptionSnapshot) throws {
        let indexed = IndexedColumns(snapshot)
        // A row read in this transaction (which holds the write lock) is still as read, so
        // when its indexed values stay, the cheaper UPDATE is exact. Otherwise: upsert.
        let keepsIndexes = indexedColumns[snapshot.originalTransactionId] == .some(.some(indexed))
        let statement = try database.statement(
            keepsIndexes ? SQLiteSchema.updateSubscriptionKeepingIndexes : SQLiteSchema.upsertSubscription)
        try SQLiteSchema.bind(snapshot, to: statement, keepingIndexedColumns: keepsIndexes)
        try statement.run()
        indexedColumns[snapshot.originalTransactionId] = indexed
        cache?.put(snapshot)
    }

    func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot] {
        let statement = try database.statement(SQLiteSchema.selectDue)
        defer { statement.reset() }
        try statement.bind(1, cutoff)
        try statement.bind(2, Int64(max(0, limit)))
        var snapshots: [SubscriptionSnapshot] = []
        // SQLite reads this transaction's own writes.
        while try statement.step() {
            let snapshot = SQLiteSchema.snapshot(from: statement)
            indexedColumns[snapshot.originalTransactionId] = IndexedColumns(row: statement)
            snapshots.append(snapshot)
        }
        return snapshots
    }
}

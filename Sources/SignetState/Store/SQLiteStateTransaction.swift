import AppStoreModels

/// The operations of one SQLite transaction of ``SQLiteStateStore``.
///
/// Lives only inside `withTransaction` (under the store's lock). Snapshots it writes go
/// straight into the store's cache; the store empties the cache if the transaction rolls back.
final class SQLiteStateTransaction: StateTransaction {
    private let database: SQLiteDatabase
    private let cache: SnapshotCache?
    /// Outbox rows this transaction added (in flight once it commits).
    private(set) var appended: [Int64] = []
    /// Outbox rows this process emitted and the sinks have not acknowledged yet.
    private let inFlight: Set<Int64>
    /// The indexed columns of the purchases this transaction read or wrote, as the database
    /// holds them now (nil: no row), so ``save(_:)`` can leave unchanged index entries alone.
    private var indexedColumns: [String: IndexedColumns?] = [:]

    /// The values of a subscription row that its secondary indexes cover.
    private struct IndexedColumns: Equatable {
        var appAccountToken: String?
        var nextBoundary: Int64?

        /// The values a save of `snapshot` writes.
        init(_ snapshot: SubscriptionSnapshot) {
            appAccountToken = snapshot.appAccountToken?.description
            nextBoundary = snapshot.nextBoundary
        }

        /// The values as stored, from a row selected with ``SQLiteSchema/subscriptionColumns``
        /// (an older version or the backfill may have stored another boundary than the
        /// snapshot's own rule gives today).
        init(row: SQLiteStatement) {
            appAccountToken = row.string(SQLiteSchema.appAccountTokenColumn)
            nextBoundary = row.int64(SQLiteSchema.nextBoundaryColumn)
        }
    }

    init(database: SQLiteDatabase, cache: SnapshotCache?, inFlight: Set<Int64>) {
        self.database = database
        self.cache = cache
        self.inFlight = inFlight
    }

    func containsKey(_ key: String) throws -> Bool {
        let statement = try database.statement(SQLiteSchema.selectKey)
        defer { statement.reset() }
        try statement.bind(1, key)
        return try statement.step()
    }

    func recordKey(_ key: String, seenAt: Int64) throws {
        let statement = try database.statement(SQLiteSchema.insertKey)
        try statement.bind(1, key)
        try statement.bind(2, seenAt)
        try statement.run()
    }

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

    /// Every row's `record` column (the statement's first), decoded.
    static func records<Value: Decodable>(_ type: Value.Type, from statement: SQLiteStatement) throws -> [Value] {
        var values: [Value] = []
        while try statement.step() {
            values.append(try ConsumptionRecordCoding.decode(type, from: statement.string(0) ?? ""))
        }
        return values
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

    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        let statement = try database.statement(SQLiteSchema.insertEvent)
        try statement.bind(1, event.eventId)
        try statement.bind(2, event.type.rawValue)
        try statement.bind(3, event.messageKey)
        try statement.bind(4, event.environment)
        try statement.bind(5, event.productId)
        try statement.bind(6, bytes: payload)
        try statement.bind(7, createdAt)
        try statement.bind(8, inputKey)
        try statement.run()
        let sequence = database.lastInsertRowID
        appended.append(sequence)
        return sequence
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

    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] {
        let statement = try database.statement(SQLiteSchema.selectUndeliveredByInput)
        defer { statement.reset() }
        try statement.bind(1, inputKey)
        var entries: [OutboxEntry] = []
        while try statement.step() {
            let entry = SQLiteSchema.outboxEntry(from: statement)
            if !inFlight.contains(entry.sequence) { entries.append(entry) }
        }
        return entries
    }
}

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
        if let cache, let hit = cache.get(originalTransactionId) { return hit }
        let statement = try database.statement(SQLiteSchema.selectSubscription)
        defer { statement.reset() }
        try statement.bind(1, originalTransactionId)
        guard try statement.step() else { return nil }
        return SQLiteSchema.snapshot(from: statement)
    }

    func save(_ snapshot: SubscriptionSnapshot) throws {
        let statement = try database.statement(SQLiteSchema.upsertSubscription)
        try SQLiteSchema.bind(snapshot, to: statement)
        try statement.run()
        cache?.put(snapshot)
    }

    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        let statement = try database.statement(SQLiteSchema.insertEvent)
        try statement.bind(1, event.eventId)
        try statement.bind(2, event.type.rawValue)
        try statement.bind(3, event.originalTransactionId ?? "")
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
        while try statement.step() { snapshots.append(SQLiteSchema.snapshot(from: statement)) }
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

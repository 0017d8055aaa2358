import AppStoreModels

/// The operations of one SQLite transaction of ``SQLiteStateStore``.
///
/// Lives only inside `withTransaction` (under the store's lock). Snapshots it writes go
/// straight into the store's cache; the store empties the cache if the transaction rolls back.
final class SQLiteStateTransaction: StateTransaction {
    let database: SQLiteDatabase
    let cache: SnapshotCache?
    /// Outbox rows this transaction added (in flight once it commits).
    var appended: [Int64] = []
    /// Outbox rows this process emitted and the sinks have not acknowledged yet.
    let inFlight: Set<Int64>
    /// The indexed columns of the purchases this transaction read or wrote, as the database
    /// holds them now (nil: no row), so ``save(_:)`` can leave unchanged index entries alone.
    var indexedColumns: [String: IndexedColumns?] = [:]

    /// The values of a subscription row that its secondary indexes cover.
    struct IndexedColumns: Equatable {
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

    /// Every row's `record` column (the statement's first), decoded.
    static func records<Value: Decodable>(_ type: Value.Type, from statement: SQLiteStatement) throws -> [Value] {
        var values: [Value] = []
        while try statement.step() {
            values.append(try ConsumptionRecordCoding.decode(type, from: statement.string(0) ?? ""))
        }
        return values
    }
}

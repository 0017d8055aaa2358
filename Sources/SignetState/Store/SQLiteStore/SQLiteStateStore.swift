import AppStoreModels
import Foundation
import Synchronization
import SignetCore
import Metrics

/// The embedded default ``StateStore``: one SQLite file (the system SQLite), WAL mode.
///
/// One connection, used under a `Mutex`: the `dedupe` and `transition` stages and the
/// acknowledgements of the runner share it, and every public method holds the lock only
/// for synchronous work. One SQLite transaction per batch (so one fsync per batch with
/// `synchronous: full`), prepared statements reused, and optionally a bounded cache of
/// snapshots (``Options/cacheCapacity``). One process writes a database at a time; readers
/// (the CLI) may open it read-only meanwhile.
public final class SQLiteStateStore: StoreRoles {
    /// This store's roles, for Signet's stages.
    public var roles: StateStoreRoles { StateStoreRoles(self) }

    /// How much a commit waits for the disk.
    public enum Durability: String, Sendable, CaseIterable {
        /// fsync at every commit: a committed batch survives power loss (default).
        case full
        /// fsync only at WAL checkpoints: survives a crash of the process, not of the machine.
        case normal
        /// No fsync at all (tests, throwaway data).
        case off
    }

    /// Connection settings.
    public struct Options: Sendable, Hashable {
        /// How much a commit waits for the disk (default: fsync at every commit).
        public var durability: Durability = .full
        /// How long a statement waits for another connection's lock.
        public var busyTimeout: Duration = .seconds(5)
        /// Snapshots kept in memory (bounded; 0, the default, disables the cache).
        ///
        /// Off by default: reading a purchase back is one primary-key lookup in pages SQLite's
        /// own page cache holds, cheaper than keeping a copy of every snapshot written (measured:
        /// 3% less CPU and 13 MiB less memory without it). Worth enabling only when the same
        /// purchases receive many notifications within minutes.
        public var cacheCapacity: Int = 0
        /// Open without writing (queries only; the file must exist).
        public var readOnly = false
        /// How long delivered outbox rows are kept; zero deletes them on acknowledgement.
        public var outboxRetention: Duration = .zero

        /// The defaults: full durability, 5 s busy timeout, no snapshot cache, read-write.
        public init() {}
    }

    /// `@unchecked Sendable`: the connection, its statements and the cache are reached only
    /// through `connection.withLock`, so one thread at a time uses them; nothing keeps a
    /// reference beyond the lock (transactions live inside `withTransaction`'s lock).
    final class Connection: @unchecked Sendable {
        let database: SQLiteDatabase
        let cache: SnapshotCache
        let cacheEnabled: Bool
        /// `PRAGMA data_version` when this connection last looked (nil: never).
        var dataVersion: Int64?
        /// Outbox rows emitted by this process and not yet marked delivered.
        var inFlight: Set<Int64> = []

        init(database: SQLiteDatabase, cacheCapacity: Int) {
            self.database = database
            self.cache = SnapshotCache(capacity: max(cacheCapacity, 1))
            self.cacheEnabled = cacheCapacity > 0
        }
    }

    /// The database file.
    public let path: String
    /// The settings it was opened with.
    public let options: Options
    let connection: Mutex<Connection?>
    /// Held by a writer from open to close (nil for readers).
    private let writerLock: Mutex<SQLiteWriterLock?>
    /// The `entitlement_names` table, read at open and kept in step by ``replaceEntitlementNames(_:)``.
    let names: Mutex<EntitlementNames>
    /// Whether the database has the `consent_restrictions` table: a writer creates it at open;
    /// a reader of a database from before it existed has no restrictions to read.
    let hasConsentRestrictions: Bool
    /// Whether the database has the refund-question tables (as `hasConsentRestrictions`).
    let hasConsumptionTables: Bool
    /// Whether the database has the retention answers' table (as `hasConsentRestrictions`).
    let hasRetentionOffers: Bool
    /// Whether the database has the support audit log (as `hasConsentRestrictions`).
    let hasSupportAudit: Bool
    /// A writer's read-only connections for point lookups (nil for readers and in-memory databases).
    private let readers: SQLiteReaderPool?

    /// Opens (creating when needed) the database at `path`. A writer locks it
    /// (``StateStoreError/isInUse`` when another writer holds it); a reader does not.
    public convenience init(path: String, options: Options = Options()) throws {
        try self.init(path: path, options: options, lockingWriter: true)
    }

    /// `lockingWriter: false` for tests that play a second process on one file, and for a short
    /// write beside a running pipeline that touches no table the writer caches (`signet consent
    /// clear`: consent restrictions are read from the database on every use); SQLite's own
    /// locking orders the two writers.
    package init(path: String, options: Options, lockingWriter: Bool) throws {
        self.path = path
        self.options = options
        let milliseconds = Int32(clamping: options.busyTimeout.clampedMilliseconds)
        let synchronous: SQLiteDatabase.Synchronous = switch options.durability {
        case .full: .full
        case .normal: .normal
        case .off: .off
        }
        if !options.readOnly {
            // Like the file sinks: a fresh SIGNET_DATA_DIR just works.
            let folder = (path as NSString).deletingLastPathComponent
            if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
            writerLock = Mutex(lockingWriter ? try SQLiteWriterLock.acquire(database: path) : nil)
        } else {
            writerLock = Mutex(nil)
        }
        let database = try SQLiteDatabase(
            path: path, readOnly: options.readOnly, synchronous: synchronous, busyTimeoutMilliseconds: milliseconds)
        if !options.readOnly {
            _ = StateStoreMetrics.sqliteCommit
            try database.execute(SQLiteSchema.create)
            // Databases created before outbox.input_key existed get the column added.
            if try !database.columnExists(table: "outbox", column: "input_key") {
                try database.execute("ALTER TABLE outbox ADD COLUMN input_key TEXT")
            }
            try database.execute(SQLiteSchema.createInputKeyIndex)
            try database.execute(SQLiteSchema.createMessageKeyIndex)
            try database.execute(SQLiteSchema.createDeliveredIndex)
            var addedBoundary = false
            for (column, type) in SQLiteSchema.addedSubscriptionColumns
            where try !database.columnExists(table: "subscriptions", column: column) {
                try database.execute("ALTER TABLE subscriptions ADD COLUMN \(column) \(type)")
                if column == "next_boundary" { addedBoundary = true }
            }
            if addedBoundary { try database.execute(SQLiteSchema.backfillNextBoundary) }
            try database.execute(SQLiteSchema.createNextBoundaryIndex)
            if try !database.metaFlag(SQLiteSchema.canonicalAppAccountTokensMark) {
                try database.execute("BEGIN IMMEDIATE; " + SQLiteSchema.canonicalizeAppAccountTokens + " COMMIT;")
            }
        } else {
            try Self.shadowMissingColumns(of: database)
        }
        names = Mutex(try Self.readEntitlementNames(from: database))
        hasConsentRestrictions = try database.columnExists(table: "consent_restrictions", column: "app_transaction_id")
        hasConsumptionTables = try database.columnExists(table: "consumption_ledger", column: "key")
        hasRetentionOffers = try database.columnExists(table: "retention_offers", column: "request_id")
        hasSupportAudit = try database.columnExists(table: "support_audit", column: "request_id")
        connection = Mutex(Connection(database: database, cacheCapacity: options.cacheCapacity))
        readers = options.readOnly || path.isEmpty || path.hasPrefix(":memory:") || path.hasPrefix("file:")
            ? nil : SQLiteReaderPool(path: path, busyTimeoutMilliseconds: milliseconds)
    }

    /// A reader of a database an older Signet wrote (it cannot add the columns this one
    /// reads): a temporary view of the same name, which queries see before the table, gives
    /// every missing column as NULL. The temporary schema lives in memory; the file is untouched.
    private static func shadowMissingColumns(of database: SQLiteDatabase) throws {
        guard try database.columnExists(table: "subscriptions", column: "original_transaction_id") else { return }
        var missing: [String] = []
        for (column, _) in SQLiteSchema.addedSubscriptionColumns
        where try !database.columnExists(table: "subscriptions", column: column) {
            missing.append("NULL AS \(column)")
        }
        guard !missing.isEmpty else { return }
        try database.execute("CREATE TEMP VIEW subscriptions AS SELECT *, \(missing.joined(separator: ", ")) FROM main.subscriptions")
    }

    /// The stored mapping; none in a database from before it existed.
    private static func readEntitlementNames(from database: SQLiteDatabase) throws -> EntitlementNames {
        guard try database.columnExists(table: "entitlement_names", column: "entitlement") else { return .none }
        let statement = try database.statement(SQLiteSchema.selectEntitlementNames)
        defer { statement.reset() }
        var pairs: [(entitlement: String, identifier: String)] = []
        while try statement.step() {
            if let name = statement.string(0), let identifier = statement.string(1) { pairs.append((name, identifier)) }
        }
        return EntitlementNames(pairs: pairs)
    }

    func withConnection<Result>(_ body: (Connection) throws -> Result) throws -> Result {
        try connection.withLock { connection in
            guard let connection else {
                throw SQLiteError(code: 21, message: "the state store is closed", context: path)
            }
            return try body(connection)
        }
    }

    /// Runs a read of committed data on a read-only connection when one is free, so it does not
    /// wait for a batch the writer is committing; else on the writer's connection.
    func withReader<Result>(_ body: (SQLiteDatabase) throws -> Result) throws -> Result {
        if let readers, let result = try readers.withReader(body) { return result }
        return try withConnection { try body($0.database) }
    }

    package func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
        try withConnection { connection in
            let transaction = SQLiteStateTransaction(
                database: connection.database, cache: connection.cacheEnabled ? connection.cache : nil,
                inFlight: connection.inFlight)
            let began = ContinuousClock.now
            // Failed ones count too: a transaction that waited out the busy timeout behind another
            // process's lock (a stuck backup) is the slowest commit there is, and the one
            // SignetStateCommitSlow exists for; recorded only on success, it would never fire.
            defer { StateStoreMetrics.sqliteCommit.recordNanoseconds((ContinuousClock.now - began).clampedNanoseconds) }
            let result: Result
            do {
                result = try connection.database.transaction {
                    // Another process (a second group member on the same file) may have written
                    // since our last commit; data_version changes exactly then. Checked under the
                    // write lock, so cached snapshots are never older than the file.
                    if connection.cacheEnabled {
                        let version = try connection.database.dataVersion()
                        if version != connection.dataVersion {
                            connection.cache.removeAll()
                            connection.dataVersion = version
                        }
                    }
                    return try body(transaction)
                }
            } catch {
                // The transaction's saves went into the cache as it wrote them; rolled back,
                // they never happened.
                connection.cache.removeAll()
                throw error
            }
            connection.inFlight.formUnion(transaction.appended)
            return result
        }
    }

    /// `sequences` as ranges of consecutive numbers (each range holds only given numbers).
    static func consecutiveRuns(_ sequences: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for sequence in sequences.sorted() {
            // Sorted, so `sequence` is at least the last run's start.
            if let last = runs.last,
               sequence <= last.upperBound || (last.upperBound < .max && sequence == last.upperBound + 1) {
                if sequence > last.upperBound { runs[runs.count - 1] = last.lowerBound...sequence }
            } else {
                runs.append(sequence...sequence)
            }
        }
        return runs
    }

    package func prune(keysBefore: Int64, now: Int64) throws {
        let deliveredBefore = now - options.outboxRetention.clampedMilliseconds
        try withConnection { connection in
            let database = connection.database
            // Bounded chunks keep one prune from stalling a batch.
            let keys = try database.statement(SQLiteSchema.pruneKeys)
            try keys.bind(1, keysBefore)
            try keys.bind(2, Int64(20_000))
            try keys.run()
            guard options.outboxRetention > .zero else { return }
            let events = try database.statement(SQLiteSchema.pruneEvents)
            try events.bind(1, deliveredBefore)
            try events.bind(2, Int64(20_000))
            try events.run()
        }
    }

    public func close() throws {
        readers?.close()
        connection.withLock { connection in
            connection?.database.close()
            connection = nil
        }
        writerLock.withLock { $0 = nil }
    }
}

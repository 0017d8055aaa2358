import AppStoreModels
import Foundation
public import Logging
import NIOCore
import PostgresNIO
import SignetCore
public import SignetState
import Synchronization

/// A `StateStore` in PostgreSQL, shared by several Signet instances on several machines.
///
/// Same contract as `SQLiteStateStore`: one transaction per batch holds its dedupe keys,
/// snapshots and outbox events; outbox rows are marked (or deleted) once the sinks
/// acknowledged them; retention prunes keys and delivered rows. Across instances:
/// snapshots are locked and compare-and-set on a version, dedupe keys are a primary key,
/// and each instance holds a lease (`PostgresLease`) on the outbox rows it emitted, so
/// another instance redelivers them only once the first is gone.
///
/// Faults: a batch whose transaction loses a race is rerun; one that cannot reach the
/// server is retried with capped exponential backoff for up to ``PostgresStoreOptions``'
/// `outageTimeout`, which blocks the calling stage thread and so pauses the pipeline. The
/// source is committed only after delivery, so no position passes what was stored.
/// Calls run on the sessions of a pool of `pool_size` connections (`PostgresSessionPool`),
/// one call per session at a time; see `PostgresSession` for why waiting is safe.
public final class PostgresStateStore: StoreRoles {
    /// This store's roles, for Signet's stages.
    public var roles: StateStoreRoles { StateStoreRoles(self) }

    public let options: PostgresStoreOptions
    /// This instance's id (`signet_instances.id`, `signet_outbox.owner`).
    public let instanceId: String
    /// The sessions of calls (the lease has its own connection).
    private let pool: PostgresSessionPool
    let inFlight = InFlightSequences()
    /// The last outage error while a call is retrying one; nil once a call succeeds.
    /// Readiness (`containedKeys([])`) reports it without waiting for the server.
    let outage = Mutex<PostgresStoreError?>(nil)
    let lease: PostgresLease
    private let logger: Logger
    /// `signet_entitlement_names` as read at open, kept in step by ``replaceEntitlementNames(_:)``.
    let names = Mutex(EntitlementNames.none)

    /// Connects, applies pending migrations (under an advisory lock) and takes a lease.
    ///
    /// A server that cannot be reached yet is waited for up to `outageTimeout`, as in the
    /// middle of a run: a service started with (or just before) its database comes up.
    public init(options: PostgresStoreOptions, logger: Logger = Logger(label: "signet.postgres")) throws {
        self.options = options
        self.logger = logger
        instanceId = UUID().uuidString.lowercased()
        pool = PostgresSessionPool(size: options.poolSize, options: options, applicationName: "signet", logger: logger)
        lease = PostgresLease(instanceId: instanceId, options: options, logger: logger)
        if !options.readOnly {
            try withSession("start") { session in _ = try PostgresMigrations.apply(on: session) }
            try lease.start()
        }
        let stored = try withSession("entitlement names", waitingOutOutages: false) { session in
            if options.readOnly { try PostgresMigrations.checkCurrent(on: session) }
            return try session.query("SELECT entitlement, granted_by FROM signet_entitlement_names")
                .map { try $0.decode((String, String).self) }.map { (entitlement: $0.0, identifier: $0.1) }
        }
        names.withLock { $0 = EntitlementNames(pairs: stored) }
    }

    /// A store for queries only (no migrations, no lease), failing fast when unreachable.
    public static func openReadOnly(url: String) throws -> PostgresStateStore {
        var options = PostgresStoreOptions(url: try PostgresURL(url))
        options.readOnly = true
        options.outageTimeout = .zero
        return try PostgresStateStore(options: options)
    }

    /// Applies pending migrations without opening a store (`signet migrate`); returns them.
    public static func migrate(options: PostgresStoreOptions, logger: Logger = Logger(label: "signet.postgres")) throws -> [Int] {
        let session = PostgresSession(options: options, applicationName: "signet-migrate", logger: logger)
        defer { session.drop() }
        return try PostgresMigrations.apply(on: session)
    }

    /// Runs `body` with a session of the pool, retrying conflicts and outages with backoff.
    ///
    /// - Parameter waitingOutOutages: false for lookups that answer someone now (the
    ///   entitlement API, `signet state show`): during an outage they fail at once instead
    ///   of holding their caller for up to `outage_timeout`.
    func withSession<Result>(
        _ what: String, waitingOutOutages: Bool = true, _ body: (PostgresSession) throws -> Result
    ) throws -> Result {
        let deadline = ContinuousClock.now + (waitingOutOutages ? options.outageTimeout : .zero)
        var backoff = Duration.milliseconds(50)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let result = try pool.withSession(body)
                outage.withLock { $0 = nil }
                return result
            } catch let error as PostgresStoreError where error.isConflict || error.isUnavailable {
                if error.isUnavailable { outage.withLock { $0 = error } }
                guard ContinuousClock.now + backoff < deadline, !error.isStoreClosed else { throw error }
                if error.isConflict {
                    logger.debug("\(what): conflict with another instance, retrying (attempt \(attempt))")
                } else {
                    logger.warning("\(what): PostgreSQL unavailable (attempt \(attempt)), retrying in \(backoff): \(error)")
                }
                Thread.sleep(forTimeInterval: Double(backoff.clampedMilliseconds) / 1000)
                backoff = error.isConflict ? min(backoff * 2, .milliseconds(500)) : min(backoff * 2, .seconds(5))
            }
        }
    }

    package func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
        try withSession("batch") { session in
            let transaction = PostgresStateTransaction(session: session, instanceId: instanceId, inFlight: inFlight)
            try session.execute("BEGIN")
            let result: Result
            var announced = false
            do {
                result = try body(transaction)
                try transaction.flush()
                // In flight before the commit shows the rows to this instance's other
                // sessions, so none of them takes them for undelivered and delivers them too.
                inFlight.insert(transaction.claimed)
                announced = true
                try session.execute("COMMIT")
            } catch {
                _ = try? session.execute("ROLLBACK")
                if announced { inFlight.remove(transaction.claimed) }
                throw error
            }
            return result
        }
    }

    package func prune(keysBefore: Int64, now: Int64) throws {
        let deliveredBefore = now - options.outboxRetention.clampedMilliseconds
        let pruneEvents = options.outboxRetention > .zero
        try withSession("prune") { session in
            // Bounded chunks keep one prune from stalling a batch.
            try session.query("""
                DELETE FROM signet_dedupe_keys WHERE key IN (
                    SELECT key FROM signet_dedupe_keys WHERE seen_at < \(keysBefore) LIMIT 20000)
                """)
            if pruneEvents {
                try session.query("""
                    DELETE FROM signet_outbox WHERE seq IN (
                        SELECT seq FROM signet_outbox WHERE delivered_at IS NOT NULL AND delivered_at < \(deliveredBefore) LIMIT 20000)
                    """)
            }
            _ = try session.query("DELETE FROM signet_instances WHERE lease_expires_at < now() - interval '1 day'")
        }
    }

    /// A store dropped without ``close()`` still gives its connections and lease back.
    deinit {
        lease.stop()
        pool.close()
    }

    public func close() throws {
        lease.stop()
        pool.close()
    }

    static func binds(_ first: String, _ rest: [String]? = nil) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(first)
        if let rest { binds.append(rest) }
        return binds
    }

    static func binds(_ first: [String], _ second: [String]) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(first)
        binds.append(second)
        return binds
    }
}

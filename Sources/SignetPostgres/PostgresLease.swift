import Dispatch
import Logging
import PostgresNIO
import SignetCore
import Synchronization

/// This instance's lease in `signet_instances`: renewed every third of its length on its
/// own connection and thread, so it stays alive while the pipeline is idle or busy, and
/// expires when the process dies (or loses the database for longer than the lease).
/// Undelivered outbox rows of an instance whose lease expired are redelivered by others.
final class PostgresLease: Sendable {
    let instanceId: String
    private let lease: Duration
    private let queue = DispatchQueue(label: "signet.postgres.lease")
    /// The session, nil once stopped. Used only on `queue` (and in `stop`, under the lock).
    private let session: Mutex<PostgresSession?>
    private let logger: Logger
    /// Renews the lease on `queue` every third of its length while started.
    private let renewal = Mutex<DispatchTimer?>(nil)

    init(instanceId: String, options: PostgresStoreOptions, logger: Logger) {
        self.instanceId = instanceId
        self.lease = options.lease
        self.logger = logger
        session = Mutex(PostgresSession(options: options, applicationName: "signet-lease", logger: logger))
    }

    /// Takes the lease now (throws when the database is unreachable), then keeps renewing it.
    func start() throws {
        try session.withLock { session in
            guard let session else { return }
            try Self.renew(session, instanceId: instanceId, lease: lease)
        }
        let timer = DispatchTimer.repeating(every: .milliseconds(max(lease.clampedMilliseconds / 3, 50)), on: queue) { [self] in
            renewNow()
        }
        renewal.withLock { $0 = timer }
    }

    /// Stops renewing and gives the lease up (so others may redeliver at once).
    func stop() {
        renewal.withLock { timer in
            defer { timer = nil }
            return timer
        }?.cancel()
        session.withLock { session in
            if let session {
                _ = try? session.query("DELETE FROM signet_instances WHERE id = \(instanceId)")
                session.drop()
            }
            session = nil
        }
    }

    private func renewNow() {
        session.withLock { session in
            guard let session else { return }
            do {
                try Self.renew(session, instanceId: instanceId, lease: lease)
            } catch {
                logger.warning("could not renew the PostgreSQL lease (retrying): \(error)")
            }
        }
    }

    private static func renew(_ session: PostgresSession, instanceId: String, lease: Duration) throws {
        let milliseconds = lease.clampedMilliseconds
        try session.query("""
            INSERT INTO signet_instances (id, lease_expires_at) VALUES (\(instanceId), now() + \(milliseconds) * interval '1 millisecond')
            ON CONFLICT (id) DO UPDATE SET lease_expires_at = EXCLUDED.lease_expires_at
            """)
    }
}

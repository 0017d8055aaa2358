import Dispatch
import Logging
import Synchronization

/// `pool_size` sessions of ``PostgresStateStore``, each lent to one call at a time.
///
/// With more than one, the calls of the pipeline's stages and of its readers no longer
/// queue behind each other: delivery marks, dedupe-key writes and the entitlement API's
/// lookups run while a batch's transaction holds its own connection. Connections open
/// lazily, so a pool of 8 that is never used concurrently keeps one open.
///
/// A caller that finds every session lent waits (stage and CLI threads only, never an
/// event loop: see ``PostgresSession``).
final class PostgresSessionPool: Sendable {
    private struct Sessions: ~Copyable {
        var idle: [PostgresSession]
        var closed = false
    }

    /// Counts the idle sessions: a caller that passed `wait()` is sure to find one.
    private let available: DispatchSemaphore
    private let sessions: Mutex<Sessions>

    init(size: Int, options: PostgresStoreOptions, applicationName: String, logger: Logger) {
        let size = max(size, 1)
        available = DispatchSemaphore(value: size)
        sessions = Mutex(Sessions(idle: (0..<size).map { _ in
            PostgresSession(options: options, applicationName: applicationName, logger: logger)
        }))
    }

    /// Runs `body` with a session of its own, waiting for one to come back when all are lent.
    func withSession<Result>(_ body: (PostgresSession) throws -> Result) throws -> Result {
        available.wait()
        let session: PostgresSession? = sessions.withLock { $0.closed ? nil : $0.idle.removeLast() }
        guard let session else {
            available.signal()
            throw PostgresStoreError.storeClosed
        }
        defer {
            let returned = sessions.withLock { sessions in
                guard !sessions.closed else { return false }
                sessions.idle.append(session)
                return true
            }
            if !returned { session.drop() }  // the pool closed meanwhile
            available.signal()
        }
        return try body(session)
    }

    /// Closes the idle connections now and each lent one when its call returns it.
    func close() {
        let idle = sessions.withLock { sessions in
            sessions.closed = true
            defer { sessions.idle = [] }
            return sessions.idle
        }
        for session in idle { session.drop() }
    }
}

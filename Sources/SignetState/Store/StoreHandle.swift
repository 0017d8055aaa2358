import Foundation
import Synchronization

/// How a stage reaches its store: an instance handed in by an embedding service or a
/// test, or a shared one from ``StateStoreRegistry`` opened in `open()` (factories must
/// not do I/O: `signet lint` builds stages without running them).
final class StoreHandle: Sendable {
    enum Origin: Sendable {
        case instance(any StateStore)
        case shared(StateStoreConfiguration, StateStoreRegistry)
    }

    let origin: Origin
    private let opened = Mutex<(any StateStore)?>(nil)
    private let lastPrune = Mutex<Int64>(0)

    init(_ origin: Origin) {
        self.origin = origin
        if case .instance(let store) = origin { opened.withLock { $0 = store } }
    }

    func open() throws {
        guard case .shared(let configuration, let registry) = origin else { return }
        let store = try registry.acquire(configuration)
        opened.withLock { $0 = store }
    }

    func close() throws {
        guard case .shared(let configuration, let registry) = origin else { return }
        let wasOpen = opened.withLock { current in
            defer { current = nil }
            return current != nil
        }
        if wasOpen { try registry.release(configuration) }
    }

    /// The opened store; throws when `open()` was not called.
    func store() throws -> any StateStore {
        guard let store = opened.withLock({ $0 }) else {
            throw SQLiteError(code: 21, message: "the state store is not open (was open() called?)", context: "\(origin)")
        }
        return store
    }

    /// Deletes dedupe keys older than `retention` (and delivered outbox rows past the store's
    /// own retention) at most once per `interval`, so pruning never runs on every batch.
    func pruneIfDue(retention: Duration, interval: Duration, now: Int64) throws {
        let due = lastPrune.withLock { last in
            guard now - last >= Self.milliseconds(interval) else { return false }
            last = now
            return true
        }
        guard due else { return }
        try store().prune(keysBefore: now - Self.milliseconds(retention), now: now)
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

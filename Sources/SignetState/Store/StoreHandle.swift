import Foundation
import SignetCore
import Synchronization

/// How a stage reaches its store: an instance handed in by an embedding service or a
/// test, or a pipeline resource (`stores:`) that the runner opens before the stages.
final class StoreHandle: Sendable {
    enum Origin: Sendable {
        case instance(any StoreRoles)
        case resource(StateStoreResource)
    }

    let origin: Origin
    private let lastPrune = Mutex<Int64>(0)

    init(_ origin: Origin) {
        self.origin = origin
    }

    /// Whether both reach one store: the same resource, or the same instance (handed in, or
    /// held by a resource built around it).
    func isSameStore(as other: StoreHandle) -> Bool {
        if case .resource(let mine) = origin, case .resource(let theirs) = other.origin, mine === theirs { return true }
        guard let mine = try? store(), let theirs = try? other.store() else { return false }
        return mine === theirs
    }

    /// The opened store; throws when its resource is not open.
    func store() throws -> any StoreRoles {
        switch origin {
        case .instance(let store): store
        case .resource(let resource): try resource.roles()
        }
    }

    /// Deletes dedupe keys older than `retention` (and delivered outbox rows past the store's
    /// own retention) at most once per `interval`, so pruning never runs on every batch.
    func pruneIfDue(retention: Duration, interval: Duration, now: Int64) throws {
        let due = lastPrune.withLock { last in
            guard now - last >= interval.clampedMilliseconds else { return false }
            last = now
            return true
        }
        guard due else { return }
        try store().prune(keysBefore: now - retention.clampedMilliseconds, now: now)
    }
}

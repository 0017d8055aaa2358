import Synchronization

/// Hands out one opened store per database (path or memory name) for the whole process,
/// so `dedupe` and `transition` configured with the same `database:` share a connection
/// and see each other's commits.
///
/// Reference counted: the store is closed when the last stage that acquired it releases it.
/// The first acquirer's options win when stages disagree.
public final class StateStoreRegistry: Sendable {
    /// The process-wide registry.
    public static let shared = StateStoreRegistry()

    private struct Entry {
        var store: any StateStore
        var users: Int
    }

    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// Opens the store (or returns the already opened one) and counts a user.
    public func acquire(_ configuration: StateStoreConfiguration) throws -> any StateStore {
        try entries.withLock { entries in
            let identity = configuration.identity
            if var entry = entries[identity] {
                entry.users += 1
                entries[identity] = entry
                return entry.store
            }
            let store: any StateStore
            switch configuration {
            case .sqlite(let path, let options):
                store = try SQLiteStateStore(path: path, options: options)
            case .memory(_, let maxKeys, let outboxRetention):
                store = InMemoryStateStore(maxKeys: maxKeys, outboxRetention: outboxRetention)
            }
            entries[identity] = Entry(store: store, users: 1)
            return store
        }
    }

    /// Counts a user out; closes the store when none is left.
    public func release(_ configuration: StateStoreConfiguration) throws {
        let closing: (any StateStore)? = entries.withLock { entries in
            let identity = configuration.identity
            guard var entry = entries[identity] else { return nil }
            entry.users -= 1
            if entry.users > 0 {
                entries[identity] = entry
                return nil
            }
            entries[identity] = nil
            return entry.store
        }
        try closing?.close()
    }
}

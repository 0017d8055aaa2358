import AppStoreModels
import SignetCore
import Synchronization

// InMemoryStateStore: dedupe keys (DedupeKeyStore, DedupeKeyTransaction).

/// The ``DedupeKeyStore`` role.
extension InMemoryStateStore {
    package func containedKeys(_ keys: [String]) throws -> Set<String> {
        // Undelivered rows are all in flight in this process (see `undeliveredEvents(inputKey:)`).
        contents.withLock { contents in Set(keys.filter { contents.keys[$0] != nil }) }
    }

    package func recordKeys(_ keys: [String], seenAt: Int64) throws {
        try withTransaction { transaction in
            for key in keys { try transaction.recordKey(key, seenAt: seenAt) }
        }
    }
}

extension InMemoryStateStore.Transaction: DedupeKeyTransaction {
    func containsKey(_ key: String) throws -> Bool { keys[key] != nil || base.keys[key] != nil }

    func recordKey(_ key: String, seenAt: Int64) throws {
        guard keys[key] == nil, base.keys[key] == nil else { return }
        keys[key] = seenAt
        keyOrder.append(key)
    }
}

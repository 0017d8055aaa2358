import AppStoreModels
import Foundation
import SignetCore
import Synchronization

// SQLiteStateStore: dedupe keys (DedupeKeyStore, DedupeKeyTransaction).

/// The ``DedupeKeyStore`` role.
extension SQLiteStateStore {
    package func containedKeys(_ keys: [String]) throws -> Set<String> {
        try withConnection { connection in try connection.database.readTransaction {
            let known = try connection.database.statement(SQLiteSchema.selectKey)
            let pending = try connection.database.statement(SQLiteSchema.selectUndeliveredSequencesByInput)
            defer {
                known.reset()
                pending.reset()
            }
            var found: Set<String> = []
            for key in keys {
                known.reset()
                try known.bind(1, key)
                guard try known.step() else { continue }
                pending.reset()
                try pending.bind(1, key)
                var handled = true
                while try pending.step() {
                    if !connection.inFlight.contains(pending.int64(0) ?? -1) {
                        handled = false
                        break
                    }
                }
                if handled { found.insert(key) }
            }
            return found
        } }
    }

    package func recordKeys(_ keys: [String], seenAt: Int64) throws {
        guard !keys.isEmpty else { return }
        try withTransaction { transaction in
            for key in keys { try transaction.recordKey(key, seenAt: seenAt) }
        }
    }
}

extension SQLiteStateTransaction: DedupeKeyTransaction {
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
}

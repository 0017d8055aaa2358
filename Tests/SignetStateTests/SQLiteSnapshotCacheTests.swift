import SignetStateTestSupport
import Testing

@testable import SignetState

/// The optional snapshot cache of ``SQLiteStateStore`` (`cache_size`): what a transaction
/// reads is never older than the file, whoever wrote it.
@Suite struct SQLiteSnapshotCacheTests {
    private static func snapshot(_ id: String, evaluatedAt: Int64) -> SubscriptionSnapshot {
        SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: evaluatedAt)
    }

    private static func cached(_ path: String, lockingWriter: Bool = true) throws -> SQLiteStateStore {
        var options = SQLiteStateStore.Options()
        options.cacheCapacity = 4
        options.durability = .off
        return try SQLiteStateStore(path: path, options: options, lockingWriter: lockingWriter)
    }

    @Test func aWriteThroughAnotherConnectionIsSeenDespiteTheCache() throws {
        let path = Fixture.temporaryDatabase()
        let first = try Self.cached(path)
        // What another process would do if it ignored the writer lock (sqlite3 by hand, say).
        let second = try Self.cached(path, lockingWriter: false)
        defer {
            try? first.close()
            try? second.close()
        }
        try first.withTransaction { try $0.save(Self.snapshot("7", evaluatedAt: 1)) }
        // `first` has "7" cached at 1; another process (here: connection) moves it on.
        try second.withTransaction { transaction in
            #expect(try transaction.subscription(originalTransactionId: "7")?.evaluatedAt == 1)
            try transaction.save(Self.snapshot("7", evaluatedAt: 2))
        }
        let seen = try first.withTransaction { try $0.subscription(originalTransactionId: "7")?.evaluatedAt }
        #expect(seen == 2)
    }

    @Test func aRolledBackSaveLeavesNoTraceInTheCache() throws {
        struct Boom: Error {}
        let store = try Self.cached(Fixture.temporaryDatabase())
        defer { try? store.close() }
        try store.withTransaction { try $0.save(Self.snapshot("7", evaluatedAt: 1)) }
        #expect(throws: Boom.self) {
            try store.withTransaction { transaction in
                try transaction.save(Self.snapshot("7", evaluatedAt: 9))
                try transaction.save(Self.snapshot("8", evaluatedAt: 9))
                // The transaction reads its own saves...
                #expect(try transaction.subscription(originalTransactionId: "7")?.evaluatedAt == 9)
                throw Boom()
            }
        }
        // ...and after the rollback nobody does.
        let after = try store.withTransaction { transaction in
            (try transaction.subscription(originalTransactionId: "7")?.evaluatedAt,
             try transaction.subscription(originalTransactionId: "8"))
        }
        #expect(after.0 == 1)
        #expect(after.1 == nil)
    }

    @Test func theCacheStaysBoundedAndCorrectPastItsCapacity() throws {
        let store = try Self.cached(Fixture.temporaryDatabase())
        defer { try? store.close() }
        for round in Int64(1)...3 {
            try store.withTransaction { transaction in
                for index in 0..<10 { try transaction.save(Self.snapshot("s\(index)", evaluatedAt: round)) }
            }
        }
        let values = try store.withTransaction { transaction in
            try (0..<10).map { try transaction.subscription(originalTransactionId: "s\($0)")?.evaluatedAt }
        }
        #expect(values == Array(repeating: 3, count: 10))
    }
}

import Foundation
import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for dedupe keys (``DedupeKeyStore``, ``DedupeKeyTransaction``), on every
/// store kind: a key is contained once recorded and committed, never from a transaction that
/// rolled back, until retention prunes it; a durable store keeps it across a restart.
@Suite struct DedupeKeyStoreContractTests {
    struct Rollback: Error {}

    @Test("recorded keys are contained, in and after their transaction; a rolled back transaction records none; recording twice keeps the first", arguments: StoreKind.available)
    func recordAndContain(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let keys: any DedupeKeyStore = store
        #expect(try keys.containedKeys(["n:a", "n:b"]).isEmpty)

        try keys.recordKeys(["n:a", "n:b"], seenAt: 1_000)
        #expect(try keys.containedKeys(["n:a", "n:b", "n:c"]) == ["n:a", "n:b"])
        #expect(try keys.containedKeys([]).isEmpty)

        try store.withTransaction { transaction in
            #expect(try transaction.containsKey("n:a"))
            #expect(try !transaction.containsKey("n:c"))
            try transaction.recordKey("n:c", seenAt: 2_000)
            // Its own write, before the commit.
            #expect(try transaction.containsKey("n:c"))
            // Again in one transaction: still one key.
            try transaction.recordKey("n:c", seenAt: 2_500)
        }
        #expect(try keys.containedKeys(["n:c"]) == ["n:c"])

        #expect(throws: Rollback.self) {
            try store.withTransaction { transaction in
                try transaction.recordKey("n:d", seenAt: 3_000)
                throw Rollback()
            }
        }
        #expect(try keys.containedKeys(["n:d"]).isEmpty)
        // A key named many times in one call is answered once.
        #expect(try keys.containedKeys(["n:a", "n:a", "n:z"]) == ["n:a"])
    }

    @Test("retention: prune forgets keys seen before the cutoff and keeps the rest, by the time each was first seen", arguments: StoreKind.available)
    func pruneByFirstSeen(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        try store.recordKeys(["n:old"], seenAt: 1_000)
        try store.recordKeys(["n:new"], seenAt: 5_000)
        // Seen again later: it keeps its first instant (retention counts from then).
        try store.recordKeys(["n:old"], seenAt: 9_000)
        try store.prune(keysBefore: 5_000, now: 10_000)
        #expect(try store.containedKeys(["n:old", "n:new"]) == ["n:new"])
        try store.prune(keysBefore: 5_001, now: 10_000)
        #expect(try store.containedKeys(["n:old", "n:new"]).isEmpty)
    }

    @Test("a restart keeps every committed key and none of a rolled back transaction", arguments: StoreKind.durable)
    func keysSurviveARestart(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        let first = try await location.open()
        try first.recordKeys((0..<100).map { "n:\($0)" }, seenAt: 1_000)
        _ = try? first.withTransaction { transaction -> Void in
            try transaction.recordKey("n:rolled-back", seenAt: 1_000)
            throw Rollback()
        }
        try first.close()
        let second = try await location.open()
        defer { try? second.close() }
        #expect(try second.containedKeys((0..<100).map { "n:\($0)" } + ["n:rolled-back"]).count == 100)
    }
}

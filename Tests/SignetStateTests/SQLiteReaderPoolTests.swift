import Dispatch
import SignetStateTestSupport
import Synchronization
import Testing

@testable import SignetState

/// The read-only connections of ``SQLiteStateStore``: a point lookup does not wait for a batch
/// the writer is committing, and reads only what was committed.
@Suite struct SQLiteReaderPoolTests {
    private static func snapshot(_ id: String, evaluatedAt: Int64) -> SubscriptionSnapshot {
        SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: evaluatedAt)
    }

    @Test("a lookup while the writer holds a transaction open answers at once, with the last commit")
    func lookupDuringAWrite() throws {
        var options = SQLiteStateStore.Options()
        options.durability = .off
        let store = try SQLiteStateStore(path: Fixture.temporaryDatabase(), options: options)
        defer { try? store.close() }
        try store.withTransaction { try $0.save(Self.snapshot("7", evaluatedAt: 1)) }

        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? store.withTransaction { transaction in
                try transaction.save(Self.snapshot("7", evaluatedAt: 2))
                inside.signal()
                // Held open as a batch's commit (its fsync) would hold it.
                _ = release.wait(timeout: .now() + 10)
            }
            written.signal()
        }
        #expect(inside.wait(timeout: .now() + 10) == .success)
        let seen = Mutex<Int64?>(nil)
        let looked = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            seen.withLock { $0 = try? store.subscription(originalTransactionId: "7")?.evaluatedAt }
            looked.signal()
        }
        // On the writer's connection this would wait for `release`.
        let answered = looked.wait(timeout: .now() + 5) == .success
        release.signal()
        #expect(answered, "the lookup waited for the writer's transaction")
        if !answered { _ = looked.wait(timeout: .now() + 10) }
        #expect(seen.withLock { $0 } == 1, "a lookup reads the last commit, not the batch in progress")
        #expect(written.wait(timeout: .now() + 10) == .success)
        #expect(try store.subscription(originalTransactionId: "7")?.evaluatedAt == 2)
    }

    @Test("more lookups at once than readers all answer (the rest take the writer's connection); a closed store refuses them")
    func beyondThePoolAndClosed() async throws {
        var options = SQLiteStateStore.Options()
        options.durability = .off
        let store = try SQLiteStateStore(path: Fixture.temporaryDatabase(), options: options)
        try store.withTransaction { transaction in
            for id in 0..<50 { try transaction.save(Self.snapshot("\(id)", evaluatedAt: Int64(id))) }
        }
        let found = await withTaskGroup(of: Bool.self) { group in
            for id in 0..<50 {
                group.addTask { (try? store.subscription(originalTransactionId: "\(id)")?.evaluatedAt) == Int64(id) }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(found == 50)
        try store.close()
        #expect(throws: (any Error).self) { try store.subscription(originalTransactionId: "1") }
    }
}

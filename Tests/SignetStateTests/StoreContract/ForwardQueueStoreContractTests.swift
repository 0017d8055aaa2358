import Foundation
import SignetState
import SignetStateTestSupport
import Testing

/// The `forward` sink's durable queue on every store kind: enqueue, claim with a lease,
/// settle, status; and on the durable ones, what survives a restart.
@Suite struct ForwardQueueStoreContractTests {
    static let targets = ["http://a.example/hook", "http://b.example/hook"]

    @Test("every body for every target, claimed oldest first up to the limit, leased, retried at its instant, removed when done", arguments: StoreFactory.all)
    func lifecycle(_ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        let bodies = (1...5).map { Array("{\"signedPayload\":\"n\($0)\"}".utf8) }
        try store.enqueueForwards(bodies, targets: Self.targets, at: 1_000)
        try store.enqueueForwards([], targets: Self.targets, at: 1_001)
        for target in Self.targets {
            #expect(try store.forwardQueueStatus(target: target) == ForwardQueueStatus(pending: 5, oldestEnqueuedAt: 1_000, nextDueAt: 1_000))
        }
        #expect(try store.forwardQueueStatus(target: "http://other").pending == 0)

        let first = try store.claimForwards(target: Self.targets[0], dueAtOrBefore: 2_000, leaseUntil: 9_000, limit: 3)
        #expect(first.map(\.body) == Array(bodies.prefix(3)))
        #expect(first.allSatisfy { $0.attempts == 1 && $0.target == Self.targets[0] && $0.enqueuedAt == 1_000 && $0.lastError == nil })
        #expect(first.map(\.id) == first.map(\.id).sorted())
        // Leased: not claimed again before the lease ends; the other two are.
        let second = try store.claimForwards(target: Self.targets[0], dueAtOrBefore: 2_000, leaseUntil: 9_000, limit: 10)
        #expect(second.map(\.body) == Array(bodies.suffix(2)))
        #expect(try store.claimForwards(target: Self.targets[0], dueAtOrBefore: 8_999, leaseUntil: 9_000, limit: 10).isEmpty)
        #expect(try store.forwardQueueStatus(target: Self.targets[0]).nextDueAt == 9_000)

        try store.settleForwards(
            done: first.map(\.id), retries: second.map { ForwardRetry(id: $0.id, at: 5_000, error: "HTTP status 503") })
        #expect(try store.forwardQueueStatus(target: Self.targets[0]) == ForwardQueueStatus(pending: 2, oldestEnqueuedAt: 1_000, nextDueAt: 5_000))
        #expect(try store.claimForwards(target: Self.targets[0], dueAtOrBefore: 4_999, leaseUntil: 9_000, limit: 10).isEmpty)
        let retried = try store.claimForwards(target: Self.targets[0], dueAtOrBefore: 5_000, leaseUntil: 9_000, limit: 10)
        #expect(retried.map(\.body) == Array(bodies.suffix(2)))
        #expect(retried.allSatisfy { $0.attempts == 2 && $0.lastError == "HTTP status 503" })
        try store.settleForwards(done: retried.map(\.id), retries: [])
        #expect(try store.forwardQueueStatus(target: Self.targets[0]).pending == 0)
        // The other target's entries are its own.
        #expect(try store.forwardQueueStatus(target: Self.targets[1]).pending == 5)
        #expect(try store.claimForwards(target: Self.targets[1], dueAtOrBefore: 1_000, leaseUntil: 2_000, limit: 10).count == 5)
    }

    @Test("queued and leased entries survive a restart; a lease that ran out makes them due again", arguments: StoreKind.durable)
    func survivesRestart(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        var store = try await location.open()
        try store.enqueueForwards([[1, 2, 3], [0, 255]], targets: ["http://a"], at: 10)
        let claimed = try store.claimForwards(target: "http://a", dueAtOrBefore: 10, leaseUntil: 100, limit: 1)
        #expect(claimed.map(\.body) == [[1, 2, 3]])
        try store.close()
        store = try await location.open()
        defer { try? store.close() }
        #expect(try store.forwardQueueStatus(target: "http://a").pending == 2)
        #expect(try store.claimForwards(target: "http://a", dueAtOrBefore: 99, leaseUntil: 200, limit: 10).map(\.body) == [[0, 255]])
        let again = try store.claimForwards(target: "http://a", dueAtOrBefore: 100, leaseUntil: 200, limit: 10)
        #expect(again.map(\.body) == [[1, 2, 3]] && again.first?.attempts == 2)
    }
}

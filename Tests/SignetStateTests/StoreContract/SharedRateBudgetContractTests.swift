import Foundation
import SignetCore
import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for the App Store API's budget (`SharedRateBudget`), on the durable
/// stores (the memory store keeps none): slots spaced by the interval, a pause that holds the
/// next slot back, and, across a restart, the pause kept.
@Suite struct SharedRateBudgetContractTests {
    @Test("slots one interval apart; another bucket is free; a pause holds the next slot and outlives a restart", arguments: StoreKind.durable)
    func slotsAndPauses(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        let store = try await location.open()
        let budget = try #require(store as? any SharedRateBudget)
        #expect(try budget.bookSlot(bucket: "t:a", interval: .seconds(2)) == .zero)
        let second = try budget.bookSlot(bucket: "t:a", interval: .seconds(2))
        // Booked right after the first: about one interval from now (less the time the calls took).
        #expect(second > .seconds(1) && second <= .seconds(2), "\(second)")
        #expect(try budget.bookSlot(bucket: "t:b", interval: .seconds(2)) == .zero)

        try budget.pause(bucket: "t:b", for: .seconds(30))
        // A shorter pause asked later does not shorten it.
        try budget.pause(bucket: "t:b", for: .seconds(1))
        let paused = try budget.bookSlot(bucket: "t:b", interval: .seconds(2))
        #expect(paused > .seconds(25) && paused <= .seconds(32), "\(paused)")
        try store.close()

        let reopened = try await location.open()
        defer { try? reopened.close() }
        let kept = try #require(reopened as? any SharedRateBudget).bookSlot(bucket: "t:b", interval: .seconds(2))
        #expect(kept > .seconds(25), "the pause was lost in the restart: \(kept)")
    }
}

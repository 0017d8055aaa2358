import Foundation
import SignetCore
import SignetPostgres
import SignetTestSupport
import Synchronization
import Testing

/// `signet_rate_budgets`: slots booked by several instances at once are spaced by one
/// interval, the longest asked; a pause holds every instance's next slot back.
@Suite(.enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing: \(PostgresServer.unavailableReason ?? "")"))
struct PostgresRateBudgetTests {
    @Test("three instances booking at once get slots one interval apart; a pause moves every next slot past it")
    func slotsAreSpacedAcrossInstances() async throws {
        let url = try PostgresServer.shared.get().makeDatabase("budget")
        let stores = try (0..<3).map { _ in try PostgresStateStore(options: try PostgresStoreTests.options(url)) }
        defer { for store in stores { try? store.close() } }
        // Long against a round trip's jitter under a loaded test run (the slot's instant on this
        // machine's clock is known only to within one).
        let interval = Duration.milliseconds(200)
        // Slot instants on this machine's clock: booked at `now`, due `wait` later; known only to
        // within the call's round trip (the database's clock decides), which a loaded machine
        // stretches: the checks allow the longest one seen.
        let booked = try await PostgresStoreTests.concurrently(12) { index -> (ContinuousClock.Instant, Duration) in
            let store = stores[index % 3]
            let before = ContinuousClock.now
            let wait = try store.bookSlot(bucket: "test:a", interval: interval)
            return (before + wait, ContinuousClock.now - before)
        }
        let slots = booked.map(\.0).sorted()
        let slack = max(.milliseconds(80), booked.map(\.1).max() ?? .zero)
        let gaps = zip(slots, slots.dropFirst()).map { $1 - $0 }
        // One interval apart give or take a round trip; together they span 11 intervals.
        #expect(gaps.allSatisfy { $0 >= interval - slack }, "\(gaps), slack \(slack)")
        #expect(try #require(slots.last) - slots[0] >= interval * 11 - slack, "slack \(slack)")

        // Another bucket is not held back by this one's bookings.
        #expect(try stores[0].bookSlot(bucket: "test:b", interval: interval) < .milliseconds(100))

        // A pause set by one instance holds the others' next slots back.
        try stores[1].pause(bucket: "test:b", for: .seconds(2))
        let afterPause = try stores[2].bookSlot(bucket: "test:b", interval: interval)
        #expect(afterPause > .milliseconds(1800) && afterPause <= .seconds(2) + .milliseconds(100), "\(afterPause)")

        // A lower rate asked by one instance spaces everybody's slots: a second apart, though the
        // other asks for 10 ms (a second is long against a loaded machine's round trips).
        _ = try stores[0].bookSlot(bucket: "test:c", interval: .seconds(1))
        let first = ContinuousClock.now + (try stores[1].bookSlot(bucket: "test:c", interval: .milliseconds(10)))
        let second = ContinuousClock.now + (try stores[1].bookSlot(bucket: "test:c", interval: .milliseconds(10)))
        #expect(second - first > .milliseconds(800), "\(second - first)")
    }
}

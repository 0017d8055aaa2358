import AppStoreModels
import Foundation
import SignetCore
@testable import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for the event outbox (``EventOutboxStore``): redelivery after a restart, retention, a purchase's history, marking delivered, on every store kind.
@Suite struct EventOutboxStoreContractTests {
    typealias F = Fixture

    @Test(arguments: StoreKind.durable)
    func restartRedeliversExactlyTheUndeliveredEvents(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        var store = try await location.open()
        var harness = StateHarness(store: store)
        // Batch 1 is delivered; batch 2 commits but the process "dies" before the sinks ack.
        _ = try await harness.run([Table.subscribed])
        let unacked = try await harness.run([Table.disabled, Table.expiredVoluntary], acknowledge: false)
        #expect(unacked.events.map(\.type) == ["auto_renew_disabled", "expired"])
        try store.close()

        store = try await location.open()
        harness = StateHarness(store: store)
        let redelivery = try #require(try await harness.transition.undeliveredOutputs())
        #expect(redelivery.isRedelivery)
        let again = StateHarness.result(of: redelivery)
        #expect(again.events.map(\.bytes) == unacked.events.map(\.bytes))
        #expect(again.events.map(\.eventId) == unacked.events.map(\.eventId))
        #expect(again.events.map(\.headers) == unacked.events.map(\.headers))
        // The source was not committed, so the inputs come again: they are duplicates now.
        let replay = try await harness.run([Table.disabled, Table.expiredVoluntary], acknowledge: false)
        #expect(replay.events.isEmpty)
        #expect(replay.dropped == 2)
        // The runner acknowledges the redelivery; after that nothing is pending.
        try await harness.transition.acknowledge(redelivery)
        try await harness.dedupe.acknowledge(redelivery)
        #expect(try await harness.transition.undeliveredOutputs() == nil)
        try store.close()
        let reopened = try await location.open()
        #expect(try reopened.undeliveredEvents().isEmpty)
        #expect(try reopened.subscription(originalTransactionId: "1000")?.state == .expired)
        try reopened.close()
    }

    @Test(arguments: StoreKind.available)
    func outboxRetentionKeepsDeliveredRowsUntilPruned(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation(outboxRetention: .seconds(3600)).open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.run([Table.subscribed])
        #expect(try store.undeliveredEvents().isEmpty)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try store.prune(keysBefore: 0, now: now + 7_200_000)
        // Keys survive (keysBefore 0), the delivered row is gone, a retry is still a retry.
        #expect(try await harness.run([Table.subscribed]).dropped == 1)
        try store.prune(keysBefore: now + 1_000_000, now: now)
        #expect(try await harness.run([Table.subscribed]).dropped == 0)
    }

    @Test("a purchase's history: its kept events in order, delivery times, the newest when limited", arguments: StoreKind.available)
    func historyOfOnePurchase(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation(outboxRetention: .seconds(3600)).open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let other = F.notification(
            .subscribed, .initialBuy, uuid: "o1", signed: Table.t0,
            transaction: F.transaction(otid: "3000", id: "3000", purchase: Table.t0, expires: Table.t0 + 30 * F.day, signed: Table.t0),
            renewal: F.renewal(otid: "3000", signed: Table.t0))
        let published = try await harness.runEach([Table.subscribed, other, Table.disabled])
        let pending = try await harness.run([Table.expiredVoluntary], acknowledge: false)

        let history = try store.eventHistory(originalTransactionId: "1000", limit: 100)
        let ownEvents = published.filter { $0.json["originalTransactionId"] as? String == "1000" } + pending.events
        #expect(history.map(\.payload) == ownEvents.map(\.bytes), "\(kind): byte for byte, in order, no other purchase's")
        #expect(history.map(\.sequence) == history.map(\.sequence).sorted())
        #expect(history.dropLast().allSatisfy { $0.deliveredAt != nil && $0.createdAt > 0 }, "\(kind)")
        #expect(history.last?.deliveredAt == nil, "\(kind): the unacknowledged event is still in flight")
        #expect(try store.eventHistory(originalTransactionId: "1000", limit: 2).map(\.sequence) == history.suffix(2).map(\.sequence))
        #expect(try store.eventHistory(originalTransactionId: "9999", limit: 10).isEmpty)

        let json = try #require(try StateJSON.history("1000", limit: 2, in: store))
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let events = try #require(answer["events"] as? [[String: Any]])
        #expect(events.map { ($0["event"] as? [String: Any])?["type"] as? String } == ["auto_renew_disabled", "expired"])
        #expect(events.last?["deliveredAt"] is NSNull)
        #expect(try StateJSON.history("9999", in: store) == nil, "neither the purchase nor an event: nil (the CLI's exit 1, the API's 404)")
    }

    @Test("marking delivered takes any set of sequences: gaps, repeats, any order", arguments: [Duration.zero, .seconds(3600)])
    func markingScatteredSequences(_ retention: Duration) async throws {
        for kind in StoreKind.available {
            let store = try await kind.makeLocation(outboxRetention: retention).open()
            defer { try? store.close() }
            let sequences = try store.withTransaction { transaction in
                try (0..<7).map { index in
                    var event = EntitlementEvent(eventId: "e\(index)", type: .granted, entitled: true, source: .notification)
                    event.originalTransactionId = "sub-\(index)"
                    return try transaction.appendEvent(event, payload: Array("e\(index)".utf8), inputKey: "k\(index)", createdAt: 1)
                }
            }
            #expect(try store.undeliveredEvents().map(\.sequence) == sequences, "\(kind)")
            // Two runs (0-1, 3-4) and a single (6), out of order, with a repeat.
            try store.markDelivered([sequences[4], sequences[0], sequences[6], sequences[3], sequences[1], sequences[0]], at: 5)
            #expect(try store.undeliveredEvents().map(\.sequence) == [sequences[2], sequences[5]], "\(kind)")
            try store.markDelivered([sequences[5]], at: 6)
            #expect(try store.undeliveredEvents().map(\.sequence) == [sequences[2]], "\(kind)")
        }
    }
}

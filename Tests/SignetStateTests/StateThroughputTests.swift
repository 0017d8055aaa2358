import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

/// Cost of dedupe + transition per record with the durable store, the way the runner
/// drives them (batches of 1000, one SQLite transaction and one fsync per batch).
/// `SIGNET_STATE_PERF=<records>` sets the size (default 20000; 2000 when unset to keep
/// `swift test` quick); prints µs per record.
@Suite struct StateThroughputTests {
    @Test func perRecordCostWithDurableStore() async throws {
        let total = Int(ProcessInfo.processInfo.environment["SIGNET_STATE_PERF"] ?? "") ?? 2000
        let store = try SQLiteStateStore(path: Fixture.temporaryDatabase())
        let dedupe = DedupeStage(store: store)
        let transition = TransitionStage(store: store)
        // Half the records start subscriptions, the other half renew them; every 10th is an Apple retry.
        var payloads: [VerifiedPayload] = []
        payloads.reserveCapacity(total)
        let t0 = Fixture.t0, day = Fixture.day
        let subscriptions = max(1, total / 2)
        for index in 0..<subscriptions {
            let otid = "p\(index)"
            payloads.append(Fixture.notification(
                .subscribed, .initialBuy, uuid: "s-\(index)", signed: t0 + Int64(index),
                transaction: Fixture.transaction(otid: otid, id: otid, purchase: t0, expires: t0 + 30 * day, signed: t0 + Int64(index), token: "tok-\(index % 1000)"),
                renewal: Fixture.renewal(otid: otid, signed: t0 + Int64(index))))
        }
        for index in 0..<(total - subscriptions) {
            let otid = "p\(index)"
            let uuid = index % 10 == 9 ? "r-\(index - 1)" : "r-\(index)"
            payloads.append(Fixture.notification(
                .didRenew, uuid: uuid, signed: t0 + 30 * day + Int64(index),
                transaction: Fixture.transaction(otid: otid, id: "\(otid)-2", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day + Int64(index)),
                renewal: Fixture.renewal(otid: otid, signed: t0 + 30 * day + Int64(index))))
        }
        let records = payloads.enumerated().map { Fixture.record($0.element, line: Int64($0.offset + 1)) }
        var events = 0
        let clock = ContinuousClock()
        let started = clock.now
        var offset = 0
        while offset < records.count {
            var batch = RecordBatch(records: Array(records[offset..<min(offset + 1000, records.count)]))
            offset += 1000
            try await dedupe.process(&batch)
            try await transition.process(&batch)
            try await transition.acknowledge(batch)
            try await dedupe.acknowledge(batch)
            events += batch.records.reduce(0) { $0 + $1.outputs.count }
        }
        let elapsed = (clock.now - started).seconds
        let perRecord = elapsed / Double(total) * 1_000_000
        print("state throughput: \(total) records, \(events) events, \(String(format: "%.1f", perRecord)) µs/record, \(Int(Double(total) / elapsed)) records/s")
        #expect(events >= total - total / 10 - 1)
        #expect(try store.undeliveredEvents().isEmpty)
        #expect(perRecord < 2000, "state work is far too slow: \(perRecord) µs per record")
    }
}

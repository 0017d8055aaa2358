import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetState
import SignetStateTestSupport
import Testing

@Suite struct OutboxAndStoreTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    // Restart redelivery and outbox retention: StoreContractTests, on every durable store.

    /// A store whose transaction fails after a number of outbox appends (a dying disk).
    final class FailingStore: StoreRoles, @unchecked Sendable {
        // @unchecked: `failAfter` is set before the stage runs and read under the inner store's lock.
        let inner: InMemoryStateStore
        var failAfter: Int
        init(inner: InMemoryStateStore, failAfter: Int) { self.inner = inner; self.failAfter = failAfter }
        var roles: StateStoreRoles { StateStoreRoles(self) }

        struct Boom: Error {}
        final class Wrapped: StateTransaction {
            let inner: any StateTransaction
            var remaining: Int
            init(_ inner: any StateTransaction, remaining: Int) { self.inner = inner; self.remaining = remaining }
            func containsKey(_ key: String) throws -> Bool { try inner.containsKey(key) }
            func recordKey(_ key: String, seenAt: Int64) throws { try inner.recordKey(key, seenAt: seenAt) }
            func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? { try inner.subscription(originalTransactionId: originalTransactionId) }
            func save(_ snapshot: SubscriptionSnapshot) throws { try inner.save(snapshot) }
            func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
                if remaining == 0 { throw Boom() }
                remaining -= 1
                return try inner.appendEvent(event, payload: payload, inputKey: inputKey, createdAt: createdAt)
            }
            func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] { try inner.undeliveredEvents(inputKey: inputKey) }
            func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot] {
                try inner.subscriptionsDue(atOrBefore: cutoff, limit: limit)
            }
            func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
                try inner.consentRestriction(appTransactionId: appTransactionId)
            }
            func save(_ restriction: ConsentRestriction) throws { try inner.save(restriction) }
            func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord] {
                try inner.consumptionRequests(transactionId: transactionId)
            }
            func save(_ request: ConsumptionRequestRecord) throws { try inner.save(request) }
            func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
                try inner.consumptionRequestsDue(atOrBefore: instant, limit: limit)
            }
            func consumptionLedgerEntry(_ key: String) throws -> String? { try inner.consumptionLedgerEntry(key) }
            func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws { try inner.saveConsumptionLedgerEntry(key, document) }
            func settleRetentionOffers(originalTransactionId: String, outcome: RetentionOutcome) throws {
                try inner.settleRetentionOffers(originalTransactionId: originalTransactionId, outcome: outcome)
            }
        }

        func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
            try inner.withTransaction { try body(Wrapped($0, remaining: failAfter)) }
        }
        func containedKeys(_ keys: [String]) throws -> Set<String> { try inner.containedKeys(keys) }
        func recordKeys(_ keys: [String], seenAt: Int64) throws { try inner.recordKeys(keys, seenAt: seenAt) }
        func undeliveredEvents() throws -> [OutboxEntry] { try inner.undeliveredEvents() }
        func markDelivered(_ sequences: [Int64], at: Int64) throws { try inner.markDelivered(sequences, at: at) }
        func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? { try inner.subscription(originalTransactionId: originalTransactionId) }
        func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] { try inner.subscriptions(appAccountToken: appAccountToken) }
        func originalTransactionIds(after: String?, limit: Int) throws -> [String] { try inner.originalTransactionIds(after: after, limit: limit) }
        func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
            try inner.staleSubscriptions(endedAfter: endedAfter, endedBefore: endedBefore, after: after, limit: limit)
        }
        func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
            try inner.eventHistory(originalTransactionId: originalTransactionId, limit: limit)
        }
        var entitlementNames: EntitlementNames { inner.entitlementNames }
        func replaceEntitlementNames(_ names: EntitlementNames) throws { try inner.replaceEntitlementNames(names) }
        func prune(keysBefore: Int64, now: Int64) throws { try inner.prune(keysBefore: keysBefore, now: now) }
        func retentionOffer(requestIdentifier: String) throws -> RetentionOfferRecord? { try inner.retentionOffer(requestIdentifier: requestIdentifier) }
        func retentionOffers(originalTransactionId: String, answeredSince: Int64) throws -> [RetentionOfferRecord] {
            try inner.retentionOffers(originalTransactionId: originalTransactionId, answeredSince: answeredSince)
        }
        func recordRetentionOffers(_ records: [RetentionOfferRecord]) throws { try inner.recordRetentionOffers(records) }
        func retentionOffers(answeredSince: Int64, limit: Int) throws -> [RetentionOfferRecord] {
            try inner.retentionOffers(answeredSince: answeredSince, limit: limit)
        }
        func pruneRetentionOffers(answeredBefore: Int64, limit: Int) throws -> Int {
            try inner.pruneRetentionOffers(answeredBefore: answeredBefore, limit: limit)
        }
        func subscriptions(appTransactionId: String) throws -> [SubscriptionSnapshot] { try inner.subscriptions(appTransactionId: appTransactionId) }
        func beginSupportAction(_ record: SupportActionRecord) throws -> SupportActionRecord { try inner.beginSupportAction(record) }
        func finishSupportAction(_ record: SupportActionRecord) throws { try inner.finishSupportAction(record) }
        func supportAction(requestIdentifier: String) throws -> SupportActionRecord? { try inner.supportAction(requestIdentifier: requestIdentifier) }
        func supportActions(originalTransactionId: String) throws -> [SupportActionRecord] {
            try inner.supportActions(originalTransactionId: originalTransactionId)
        }
        func supportActions(since: Int64, limit: Int) throws -> [SupportActionRecord] { try inner.supportActions(since: since, limit: limit) }
        func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
            try inner.enqueueForwards(bodies, targets: targets, at: instant)
        }
        func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
            try inner.claimForwards(target: target, dueAtOrBefore: now, leaseUntil: leaseUntil, limit: limit)
        }
        func settleForwards(done: [Int64], retries: [ForwardRetry]) throws { try inner.settleForwards(done: done, retries: retries) }
        func forwardQueueStatus(target: String) throws -> ForwardQueueStatus { try inner.forwardQueueStatus(target: target) }
        func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
            try inner.consentRestriction(appTransactionId: appTransactionId)
        }
        func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
            try inner.consumptionRequests(requestedSince: requestedSince, limit: limit)
        }
        func consumptionLedgerEntry(_ key: String) throws -> String? { try inner.consumptionLedgerEntry(key) }
        func consumptionRequests(originalTransactionId: String, limit: Int) throws -> [ConsumptionRequestRecord] {
            try inner.consumptionRequests(originalTransactionId: originalTransactionId, limit: limit)
        }
        func close() throws {}
    }

    @Test func aFailedBatchCommitsNothingAndTheRetryEmitsTheSameEvents() async throws {
        let inputs = [Table.subscribed, Table.disabled, Table.expiredVoluntary]
        let clean = try await StateHarness(store: InMemoryStateStore()).run(inputs)

        let inner = InMemoryStateStore()
        let failing = FailingStore(inner: inner, failAfter: 2)
        let harness = StateHarness(store: failing)
        await #expect(throws: FailingStore.Boom.self) { _ = try await harness.run(inputs) }
        #expect(try inner.subscription(originalTransactionId: "1000") == nil)
        #expect(try inner.containedKeys(["n:s1", "n:d1", "n:e1"]).isEmpty)
        #expect(try inner.undeliveredEvents().isEmpty)
        failing.failAfter = .max
        let retried = try await harness.run(inputs)
        #expect(retried.events.map(\.bytes) == clean.events.map(\.bytes))
    }

    @Test func dedupeAloneRecordsKeysOnlyAfterAcknowledgement() async throws {
        let store = InMemoryStateStore()
        let dedupe = DedupeStage(store: store)
        func batch() -> RecordBatch { RecordBatch(records: [F.record(Table.subscribed, line: 1), F.record(Table.disabled, line: 2)]) }
        var first = batch()
        try await dedupe.process(&first)
        #expect(first.records.allSatisfy { $0.isActive })
        // Not acknowledged (the sinks failed / the process died): the same input passes again.
        var second = batch()
        try await dedupe.process(&second)
        #expect(second.records.allSatisfy { $0.isActive })
        try await dedupe.acknowledge(second)
        var third = batch()
        try await dedupe.process(&third)
        #expect(third.records.allSatisfy { $0.status == .dropped(reason: "duplicate") })
    }

    @Test func memoryStoreIsBounded() throws {
        let store = InMemoryStateStore(maxKeys: 10)
        for index in 0..<100 { try store.recordKeys(["k\(index)"], seenAt: Int64(index)) }
        #expect(store.keyCount == 10)
        #expect(try store.containedKeys(["k99", "k0"]) == ["k99"])
        try store.prune(keysBefore: 95, now: 0)
        #expect(store.keyCount == 5)
    }

    @Test func stagesNamingTheSameStoreResourceShareOneStore() async throws {
        let path = F.temporaryDatabase()
        let resource = StateStoreResource(.sqlite(path: path, options: SQLiteStateStore.Options()))
        let sameFile = (path as NSString).deletingLastPathComponent + "/./" + (path as NSString).lastPathComponent
        #expect(resource.identity == StateStoreResource(.sqlite(path: sameFile, options: SQLiteStateStore.Options())).identity)
        #expect(StateStoreResource(.memory(InMemoryStateStore.Options(maxKeys: 10, outboxRetention: .zero))).identity == nil)
        // Built as the loader builds them: transition on the same store checks dedupe's keys.
        var options = DedupeStage.Options()
        options.keysCheckedByTransition = true
        let dedupe = DedupeStage(resource: resource, options: options)
        let transition = TransitionStage(resource: resource)
        try await resource.open()
        var batch = RecordBatch(records: [F.record(Table.subscribed, line: 1)])
        try await dedupe.process(&batch)
        try await transition.process(&batch)
        // dedupe leaves the store check to transition's commit on their shared store, which
        // drops the retry because it sees what the first batch committed.
        var retry = RecordBatch(records: [F.record(Table.subscribed, line: 2)])
        try await dedupe.process(&retry)
        #expect(retry.records[0].isActive)
        try await transition.process(&retry)
        #expect(retry.records[0].status == .dropped(reason: "duplicate"))
        #expect(retry.records[0].outputs.isEmpty)
        // A dedupe not told that a transition checks its keys looks them up itself.
        let alone = StateStoreResource(store: try resource.store())
        var again = RecordBatch(records: [F.record(Table.subscribed, line: 3)])
        try await DedupeStage(resource: alone).process(&again)
        #expect(again.records[0].status == .dropped(reason: "duplicate"))
        try await resource.close()
        var closed = RecordBatch(records: [F.record(Table.subscribed, line: 3)])
        var failed = false
        do { try await transition.process(&closed) } catch { failed = true }
        #expect(failed, "a stage whose store resource is closed must not process")
    }
}

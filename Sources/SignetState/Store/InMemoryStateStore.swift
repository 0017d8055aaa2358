public import AppStoreModels
import SignetCore
import Synchronization

/// A ``StateStore`` in memory, for embedding and tests: same semantics as the SQLite
/// store (atomic batches, outbox), nothing survives the process.
///
/// Dedupe keys are bounded: beyond `maxKeys` the oldest are forgotten first (as they
/// would be by retention), so memory stays flat on an endless stream. Snapshots are
/// one per purchase and are not bounded.
public final class InMemoryStateStore: StateStore {
    struct Contents {
        var subscriptions: [String: SubscriptionSnapshot] = [:]
        var byToken: [AppAccountToken: Set<String>] = [:]
        var keys: [String: Int64] = [:]
        /// Keys in insertion order, for eviction; `keyHead` is the first live index.
        var keyOrder: [String] = []
        var keyHead = 0
        var outbox: [OutboxEntry] = []
        var nextSequence: Int64 = 1
        var delivered: [(sequence: Int64, at: Int64)] = []
        var entitlementNames = EntitlementNames.none
        var consentRestrictions: [String: ConsentRestriction] = [:]
        /// Refund questions per transactionId, oldest first.
        var consumptionRequests: [String: [ConsumptionRequestRecord]] = [:]
        /// The consumption ledger's documents by key.
        var consumptionLedger: [String: String] = [:]
        /// The forward queue by id (ascending in enqueue order), each with the instant it is due.
        var forwards: [Int64: (item: ForwardQueueItem, dueAt: Int64)] = [:]
        var nextForwardID: Int64 = 1
    }

    /// The most dedupe keys kept.
    public let maxKeys: Int
    private let outboxRetention: Duration
    private let contents = Mutex(Contents())

    /// What the `memory` store's keys set (``ComponentSpec/memoryStore``).
    public struct Options: Sendable, Hashable {
        /// The most dedupe keys kept; the oldest go first.
        public var maxKeys = 1_000_000
        /// How long acknowledged outbox events stay (a purchase's history).
        public var outboxRetention: Duration = .zero

        public init() {}

        public init(maxKeys: Int, outboxRetention: Duration) {
            self.maxKeys = maxKeys
            self.outboxRetention = outboxRetention
        }
    }

    public init(maxKeys: Int = Options().maxKeys, outboxRetention: Duration = Options().outboxRetention) {
        self.maxKeys = max(1, maxKeys)
        self.outboxRetention = outboxRetention
    }

    /// A store as `options` say.
    public convenience init(options: Options) {
        self.init(maxKeys: options.maxKeys, outboxRetention: options.outboxRetention)
    }

    /// Collects one transaction's writes; applied to the contents only on success.
    final class Transaction: StateTransaction {
        var base: Contents
        var keys: [String: Int64] = [:]
        var keyOrder: [String] = []
        var snapshots: [String: SubscriptionSnapshot] = [:]
        var events: [OutboxEntry] = []
        var restrictions: [String: ConsentRestriction] = [:]
        var requests: [String: [ConsumptionRequestRecord]] = [:]
        var ledger: [String: String] = [:]
        var nextSequence: Int64

        init(base: Contents) {
            self.base = base
            self.nextSequence = base.nextSequence
        }

        func containsKey(_ key: String) throws -> Bool { keys[key] != nil || base.keys[key] != nil }

        func recordKey(_ key: String, seenAt: Int64) throws {
            guard keys[key] == nil, base.keys[key] == nil else { return }
            keys[key] = seenAt
            keyOrder.append(key)
        }

        func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
            snapshots[originalTransactionId] ?? base.subscriptions[originalTransactionId]
        }

        func save(_ snapshot: SubscriptionSnapshot) throws { snapshots[snapshot.originalTransactionId] = snapshot }

        func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
            restrictions[appTransactionId] ?? base.consentRestrictions[appTransactionId]
        }

        func save(_ restriction: ConsentRestriction) throws { restrictions[restriction.appTransactionId] = restriction }

        func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord] {
            requests[transactionId] ?? base.consumptionRequests[transactionId] ?? []
        }

        func save(_ request: ConsumptionRequestRecord) throws {
            var kept = try consumptionRequests(transactionId: request.transactionId)
            kept.removeAll { $0.requestedAt == request.requestedAt }
            kept.append(request)
            kept.sort { $0.requestedAt < $1.requestedAt }
            requests[request.transactionId] = kept
        }

        /// A scan: refund questions are few, and the memory store serves embedding and tests.
        func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
            var merged = base.consumptionRequests
            merged.merge(requests) { $1 }
            let due = merged.values.joined().filter { ($0.dueAt ?? .max) <= instant }
            return Array(due.sorted { ($0.dueAt ?? 0, $0.transactionId) < ($1.dueAt ?? 0, $1.transactionId) }.prefix(max(0, limit)))
        }

        func consumptionLedgerEntry(_ key: String) throws -> String? { ledger[key] ?? base.consumptionLedger[key] }

        func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws { ledger[key] = document }

        func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
            let sequence = nextSequence
            nextSequence += 1
            events.append(OutboxEntry(
                sequence: sequence, eventId: event.eventId, eventType: event.type.rawValue,
                key: event.messageKey, environment: event.environment,
                productId: event.productId, payload: payload, inputKey: inputKey, createdAt: createdAt))
            return sequence
        }

        /// A scan: the memory store serves embedding and tests, where purchases are few.
        func subscriptionsDue(atOrBefore cutoff: Int64, limit: Int) throws -> [SubscriptionSnapshot] {
            var due: [SubscriptionSnapshot] = []
            for (id, stored) in base.subscriptions where snapshots[id] == nil {
                if let boundary = stored.nextBoundary, boundary <= cutoff { due.append(stored) }
            }
            for snapshot in snapshots.values {
                if let boundary = snapshot.nextBoundary, boundary <= cutoff { due.append(snapshot) }
            }
            due.sort { ($0.nextBoundary ?? 0, $0.originalTransactionId) < ($1.nextBoundary ?? 0, $1.originalTransactionId) }
            return Array(due.prefix(max(0, limit)))
        }

        /// Always empty: a memory store lives in one process, so every undelivered row is in
        /// flight here (emitted by `process`, or handed out by `undeliveredEvents()`).
        func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] { [] }
    }

    public func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
        try contents.withLock { contents in
            // `base` shares storage with `contents` (copy on write); it is dropped before
            // `contents` is mutated, so the dictionaries are never copied.
            let transaction = Transaction(base: contents)
            let result = try body(transaction)
            transaction.base = Contents()
            let (keys, keyOrder, snapshots, events, nextSequence) =
                (transaction.keys, transaction.keyOrder, transaction.snapshots, transaction.events, transaction.nextSequence)
            for key in keyOrder { contents.keys[key] = keys[key] }
            contents.keyOrder.append(contentsOf: keyOrder)
            Self.evict(&contents, maxKeys: maxKeys)
            for (id, snapshot) in snapshots {
                if let old = contents.subscriptions[id]?.appAccountToken, old != snapshot.appAccountToken {
                    contents.byToken[old]?.remove(id)
                }
                if let token = snapshot.appAccountToken { contents.byToken[token, default: []].insert(id) }
                contents.subscriptions[id] = snapshot
            }
            contents.outbox.append(contentsOf: events)
            contents.nextSequence = nextSequence
            contents.consentRestrictions.merge(transaction.restrictions) { $1 }
            contents.consumptionRequests.merge(transaction.requests) { $1 }
            contents.consumptionLedger.merge(transaction.ledger) { $1 }
            return result
        }
    }

    private static func evict(_ contents: inout Contents, maxKeys: Int) {
        while contents.keys.count > maxKeys, contents.keyHead < contents.keyOrder.count {
            contents.keys.removeValue(forKey: contents.keyOrder[contents.keyHead])
            contents.keyHead += 1
        }
        compactKeyOrder(&contents)
    }

    private static func compactKeyOrder(_ contents: inout Contents) {
        if contents.keyHead > 4096, contents.keyHead * 2 > contents.keyOrder.count {
            contents.keyOrder.removeFirst(contents.keyHead)
            contents.keyHead = 0
        }
    }

    public func containedKeys(_ keys: [String]) throws -> Set<String> {
        // Undelivered rows are all in flight in this process (see `undeliveredEvents(inputKey:)`).
        contents.withLock { contents in Set(keys.filter { contents.keys[$0] != nil }) }
    }

    public func recordKeys(_ keys: [String], seenAt: Int64) throws {
        try withTransaction { transaction in
            for key in keys { try transaction.recordKey(key, seenAt: seenAt) }
        }
    }

    public func undeliveredEvents() throws -> [OutboxEntry] {
        contents.withLock { contents in
            let delivered = Set(contents.delivered.map(\.sequence))
            return contents.outbox.filter { !delivered.contains($0.sequence) }
        }
    }

    public func markDelivered(_ sequences: [Int64], at instant: Int64) throws {
        let deleting = outboxRetention <= .zero
        contents.withLock { contents in
            let marked = Set(sequences)
            if deleting {
                contents.outbox.removeAll { marked.contains($0.sequence) }
            } else {
                contents.delivered.append(contentsOf: sequences.map { ($0, instant) })
            }
        }
    }

    public func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
        contents.withLock { $0.subscriptions[originalTransactionId] }
    }

    public func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        contents.withLock { $0.consentRestrictions[appTransactionId] }
    }

    public func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        contents.withLock { contents in
            let since = contents.consumptionRequests.values.joined().filter { $0.requestedAt >= requestedSince }
            return Array(since.sorted { ($0.requestedAt, $0.transactionId) < ($1.requestedAt, $1.transactionId) }.prefix(max(0, limit)))
        }
    }

    public func consumptionLedgerEntry(_ key: String) throws -> String? {
        contents.withLock { $0.consumptionLedger[key] }
    }

    public func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] {
        contents.withLock { contents in
            (contents.byToken[appAccountToken] ?? []).sorted().compactMap { contents.subscriptions[$0] }
        }
    }

    public func originalTransactionIds(after: String?, limit: Int) throws -> [String] {
        contents.withLock { contents in
            // Sorted per call: the memory store serves embedding and tests, not millions of purchases.
            Array(contents.subscriptions.keys.filter { $0 > (after ?? "") }.sorted().prefix(max(0, limit)))
        }
    }

    public func prune(keysBefore: Int64, now: Int64) throws {
        let deliveredBefore = now - outboxRetention.clampedMilliseconds
        contents.withLock { contents in
            while contents.keyHead < contents.keyOrder.count {
                let key = contents.keyOrder[contents.keyHead]
                guard let seen = contents.keys[key] else { contents.keyHead += 1; continue }
                guard seen < keysBefore else { break }
                contents.keys.removeValue(forKey: key)
                contents.keyHead += 1
            }
            Self.compactKeyOrder(&contents)
            let expired = Set(contents.delivered.filter { $0.at < deliveredBefore }.map(\.sequence))
            guard !expired.isEmpty else { return }
            contents.outbox.removeAll { expired.contains($0.sequence) }
            contents.delivered.removeAll { expired.contains($0.sequence) }
        }
    }

    public func staleSubscriptions(endedAfter: Int64, endedBefore: Int64, after: String?, limit: Int) throws -> [StalePurchase] {
        contents.withLock { contents in
            // A scan: the memory store serves embedding and tests.
            let stale = contents.subscriptions.values.compactMap { snapshot -> StalePurchase? in
                guard snapshot.expectsRenewal, let end = snapshot.periodEnd, end > endedAfter, end <= endedBefore,
                    after.map({ snapshot.originalTransactionId > $0 }) ?? true
                else { return nil }
                return StalePurchase(originalTransactionId: snapshot.originalTransactionId, periodEnd: end, environment: snapshot.environment)
            }
            return Array(stale.sorted { $0.originalTransactionId < $1.originalTransactionId }.prefix(max(0, limit)))
        }
    }

    public func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
        contents.withLock { contents in
            let delivered = Dictionary(contents.delivered.map { ($0.sequence, $0.at) }, uniquingKeysWith: { first, _ in first })
            return contents.outbox.filter { $0.key == originalTransactionId }.suffix(max(0, limit)).map { entry in
                EventHistoryEntry(
                    sequence: entry.sequence, createdAt: entry.createdAt ?? 0, deliveredAt: delivered[entry.sequence],
                    payload: entry.payload)
            }
        }
    }

    public var entitlementNames: EntitlementNames { contents.withLock { $0.entitlementNames } }

    public func replaceEntitlementNames(_ names: EntitlementNames) throws {
        contents.withLock { $0.entitlementNames = names }
    }

    public func close() throws {}

    public func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
        contents.withLock { contents in
            for body in bodies {
                for target in targets {
                    let id = contents.nextForwardID
                    contents.nextForwardID += 1
                    let item = ForwardQueueItem(id: id, target: target, body: body, enqueuedAt: instant, attempts: 0, lastError: nil)
                    contents.forwards[id] = (item, instant)
                }
            }
        }
    }

    public func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
        contents.withLock { contents in
            // A scan: the memory store serves embedding and tests.
            let due = contents.forwards.values.filter { $0.item.target == target && $0.dueAt <= now }.map(\.item.id).sorted()
            return due.prefix(max(0, limit)).compactMap { id in
                guard var entry = contents.forwards[id] else { return nil }
                entry.item.attempts += 1
                entry.dueAt = leaseUntil
                contents.forwards[id] = entry
                return entry.item
            }
        }
    }

    public func settleForwards(done: [Int64], retries: [ForwardRetry]) throws {
        contents.withLock { contents in
            for id in done { contents.forwards[id] = nil }
            for retry in retries {
                guard var entry = contents.forwards[retry.id] else { continue }
                entry.dueAt = retry.at
                entry.item.lastError = retry.error
                contents.forwards[retry.id] = entry
            }
        }
    }

    public func forwardQueueStatus(target: String) throws -> ForwardQueueStatus {
        contents.withLock { contents in
            let entries = contents.forwards.values.filter { $0.item.target == target }
            return ForwardQueueStatus(
                pending: entries.count, oldestEnqueuedAt: entries.map(\.item.enqueuedAt).min(), nextDueAt: entries.map(\.dueAt).min())
        }
    }

    /// How many dedupe keys are held (for tests of the bound).
    package var keyCount: Int { contents.withLock { $0.keys.count } }
}

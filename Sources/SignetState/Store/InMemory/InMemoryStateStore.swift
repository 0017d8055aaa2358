import AppStoreModels
import SignetCore
import Synchronization

/// A ``StateStore`` in memory, for embedding and tests: same semantics as the SQLite
/// store (atomic batches, outbox), nothing survives the process.
///
/// Dedupe keys are bounded: beyond `maxKeys` the oldest are forgotten first (as they
/// would be by retention), so memory stays flat on an endless stream. Snapshots are
/// one per purchase and are not bounded.
public final class InMemoryStateStore: StoreRoles {
    /// This store's roles, for Signet's stages.
    public var roles: StateStoreRoles { StateStoreRoles(self) }

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
        /// Retention answers by request identifier.
        var retentionOffers: [String: RetentionOfferRecord] = [:]
        /// The support audit log by request identifier.
        var supportActions: [String: SupportActionRecord] = [:]
        /// The forward queue by id (ascending in enqueue order), each with the instant it is due.
        var forwards: [Int64: (item: ForwardQueueItem, dueAt: Int64)] = [:]
        var nextForwardID: Int64 = 1
    }

    /// The most dedupe keys kept.
    public let maxKeys: Int
    let outboxRetention: Duration
    let contents = Mutex(Contents())

    /// What the `memory` store's keys set (`ComponentSpec/memoryStore`).
    public struct Options: Sendable, Hashable {
        /// The most dedupe keys kept; the oldest go first.
        public var maxKeys = 1_000_000
        /// How long acknowledged outbox events stay (a purchase's history).
        public var outboxRetention: Duration = .zero

        /// The defaults: a million dedupe keys, delivered outbox rows deleted at once.
        public init() {}

        /// At most `maxKeys` dedupe keys (the oldest go first); delivered outbox rows kept `outboxRetention`.
        public init(maxKeys: Int, outboxRetention: Duration) {
            self.maxKeys = maxKeys
            self.outboxRetention = outboxRetention
        }
    }

    /// An empty store, keeping at most `maxKeys` dedupe keys and delivered outbox rows `outboxRetention`.
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
        /// Outcomes settled here, applied to the answers at commit (in order).
        var settled: [(originalTransactionId: String, outcome: RetentionOutcome)] = []
        var nextSequence: Int64

        init(base: Contents) {
            self.base = base
            self.nextSequence = base.nextSequence
        }
    }

    package func withTransaction<Result>(_ body: (any StateTransaction) throws -> Result) throws -> Result {
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
            for (id, outcome) in transaction.settled { Self.settle(&contents.retentionOffers, originalTransactionId: id, outcome: outcome) }
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

    package func prune(keysBefore: Int64, now: Int64) throws {
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

    public func close() throws {}

    /// How many dedupe keys are held (for tests of the bound).
    package var keyCount: Int { contents.withLock { $0.keys.count } }
}

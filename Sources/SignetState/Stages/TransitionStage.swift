public import SignetCore
import AppStoreModels
import SignetJWS

/// `transition`: moves each purchase through its state machine and publishes the
/// entitlement changes through a transactional outbox.
///
/// Per batch, in ONE store transaction: the authoritative duplicate check, the state
/// changes, the dedupe keys and the outgoing events (outbox rows). Only after the commit
/// are the events put on the records (key = originalTransactionId, value = event JSON,
/// headers `signet-event-id`, `signet-event-type`, `signet-environment`,
/// `signet-product-id`). ``acknowledge(_:)`` marks them delivered once every sink acked,
/// and ``undeliveredOutputs()`` hands back what a crash left undelivered, byte for byte.
///
/// Time is an input too: as a `TickingStage` it sweeps every `expirySweep` for purchases
/// whose access ended with no notification (``sweep(at:limit:)``), and publishes those events
/// through the same outbox.
public final class TransitionStage: TickingStage {
    public let name = "transition"

    /// Settings of the stage besides the store.
    public struct Options: Sendable {
        /// How notifications move a purchase: grace, durations of non-renewing products, consent rules.
        public var policy = TransitionPolicy()
        /// Used when no `dedupe` stage computed a key for the record.
        public var dedupeKey = DedupeKeyKind.notificationUUID
        /// How long dedupe keys are kept: longer than Apple retries a notification
        /// (`NotificationRetrySchedule/total`, about 6.5 days).
        public var retention: Duration = .seconds(30 * 86_400)
        /// How often old keys and delivered outbox rows are pruned.
        public var pruneInterval: Duration = .seconds(60)
        /// How often a running pipeline sweeps for access that ended by time (`expiry_sweep`);
        /// zero: never (then `signet expire` can sweep from cron).
        public var expirySweep: Duration = .seconds(60)
        /// How long past a boundary the sweep waits before it says access ended
        /// (`expiry_leeway`), so a renewal Apple reports a little late does not flap.
        public var expiryLeeway: Duration = .seconds(300)
        /// Most purchases one sweep transaction moves; a larger backlog drains over later sweeps.
        public var sweepLimit = 10_000
        /// The current time in ms since 1970, for the sweep (and nothing else); tests inject
        /// their own. Events never depend on it, only on the boundaries crossed.
        public var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }

        /// The defaults (the `transition` stage's in a pipeline file).
        public init() {}
    }

    /// The stage's settings.
    public let options: Options
    let handle: StoreHandle

    /// It publishes its events instead of earlier outputs, and checks every dedupe key in its commit.
    public var traits: Set<StageTrait> { [.replacesOutputs, .checksDedupeKeys] }

    /// A stage over a store the caller owns (embedding, tests).
    public init(store: any StateStore, options: Options = Options()) {
        self.handle = StoreHandle(.instance(store.roles.store))
        self.options = options
    }

    /// A stage over a store resource of the pipeline (`stores:`), which the runner opens.
    public init(resource: StateStoreResource, options: Options = Options()) {
        self.handle = StoreHandle(.resource(resource))
        self.options = options
    }

    private enum Outcome {
        case duplicate
        /// Seen before, but its events were never acknowledged: the process that committed
        /// them died before delivering (another group member, or this one before a restart).
        case redeliver([OutboxEntry])
        case rejected(RecordRejection)
        case applied([EntitlementEvent], [OutboxEntry])
    }

    public func process(_ batch: inout RecordBatch) async throws {
        let store = try handle.store()
        var indices: [Int] = []
        var inputs: [TransitionInput] = []
        var keys: [String] = []
        indices.reserveCapacity(batch.count)
        inputs.reserveCapacity(batch.count)
        keys.reserveCapacity(batch.count)
        for index in batch.records.indices where batch.records[index].isActive {
            // `dedupe` derived the input already when it ran; else derive it here.
            let input: TransitionInput
            if let derived = batch.records[index][TransitionInputPart.self] {
                input = derived
            } else if let payload = batch.records[index][VerifiedPayloadPart.self] {
                input = TransitionInput(payload)
            } else {
                batch.records[index].reject(
                    RecordRejection(.missingTransaction, "no verified payload: put `verify` before `transition`"), stage: name)
                continue
            }
            keys.append(batch.records[index][DedupeKeyPart.self] ?? options.dedupeKey.key(for: input))
            inputs.append(input)
            indices.append(index)
        }
        guard !inputs.isEmpty else { return }

        let policy = options.policy
        let names = store.entitlementNames
        let now = WallClock.milliseconds()
        let outcomes: [Outcome] = try store.withTransaction { transaction in
            // The app transactions first: a shared store reads them with the dedupe keys.
            try transaction.prefetchConsentRestrictions(
                appTransactionIds: inputs.lazy.filter { $0.source == .notification }.compactMap(\.appTransactionId))
            // With the purchases migrations end (taken in one sorted pass with the rest: no lock
            // order for two instances to disagree on).
            try transaction.prefetch(
                keys: keys,
                originalTransactionIds: inputs.compactMap(\.originalTransactionId) + inputs.compactMap(\.transaction?.previousOriginalTransactionId))
            var seen = Set<String>(minimumCapacity: keys.count)
            var outcomes: [Outcome] = []
            outcomes.reserveCapacity(keys.count)
            for item in inputs.indices {
                let key = keys[item]
                guard seen.insert(key).inserted else {
                    outcomes.append(.duplicate)  // its first copy in this batch carries the events
                    continue
                }
                if try transaction.containsKey(key) {
                    let pending = try transaction.undeliveredEvents(inputKey: key)
                    outcomes.append(pending.isEmpty ? .duplicate : .redeliver(pending))
                    continue
                }
                let input = inputs[item]
                // The app download's consent restriction first: RESCIND_CONSENT concerns no purchase.
                let consent: ConsentRule.Change?
                do {
                    // Only notifications restrict or lift (a status or a forwarded transaction says nothing of consent).
                    let stored = input.source == .notification
                        ? try input.appTransactionId.flatMap { try transaction.consentRestriction(appTransactionId: $0) } : nil
                    consent = try ConsentRule.apply(input, to: stored)
                } catch let rejection as RecordRejection {
                    outcomes.append(.rejected(rejection))
                    continue
                }
                let previous = try input.originalTransactionId.flatMap {
                    try transaction.subscription(originalTransactionId: $0)
                }
                switch SubscriptionStateMachine.apply(input, to: previous, policy: policy) {
                case .ignored:
                    if let consent { try transaction.save(consent.restriction) }
                    try Self.recordRefundQuestion(of: input, now: now, in: transaction)
                    try Self.settleRetentionOffers(of: input, in: transaction)
                    try transaction.recordKey(key, seenAt: now)
                    let events = names.annotated(consent.map { [$0.event] } ?? [])
                    outcomes.append(.applied(events, try Self.append(events, inputKey: key, createdAt: now, to: transaction)))
                case .rejected(let rejection):
                    outcomes.append(.rejected(rejection))
                case .applied(let snapshot, var events):
                    if let consent {
                        try transaction.save(consent.restriction)
                        events.insert(consent.event, at: 0)
                    }
                    if let snapshot { try transaction.save(snapshot) }
                    try Self.recordRefundQuestion(of: input, now: now, in: transaction)
                    try Self.settleRetentionOffers(of: input, in: transaction)
                    if let current = snapshot ?? previous {
                        events += try Self.endMigratedPurchase(of: current, input: input, policy: policy, in: transaction)
                    }
                    let events = names.annotated(events)
                    try transaction.recordKey(key, seenAt: now)
                    outcomes.append(.applied(events, try Self.append(events, inputKey: key, createdAt: now, to: transaction)))
                }
            }
            return outcomes
        }
        FaultInjection.point("after_state_commit")

        for (index, outcome) in zip(indices, outcomes) {
            switch outcome {
            case .duplicate:
                batch.records[index].drop(reason: "duplicate")
            case .redeliver(let entries):
                // Same bytes, ids and order as first committed; `acknowledge` marks them delivered.
                batch.records[index][OutboxSequencesPart.self] = entries.map(\.sequence)
                batch.records[index].outputs = entries.map(Self.message(for:))
            case .rejected(let rejection):
                batch.records[index].reject(rejection, stage: name)
            case .applied(let events, let entries):
                batch.records[index][StateAppliedPart.self] = true
                batch.records[index][EntitlementEventsPart.self] = events
                batch.records[index][OutboxSequencesPart.self] = entries.map(\.sequence)
                // The events replace the verified document `verify` put there (when it did):
                // downstream of `transition` a record publishes what changed, nothing else.
                batch.records[index].outputs = entries.map(Self.message(for:))
            }
        }
    }

    /// The refund question a CONSUMPTION_REQUEST asks, or the outcome a REFUND, REFUND_DECLINED or
    /// REFUND_REVERSED tells of one (``ConsumptionRequestRule``), saved in the input's transaction.
    private static func recordRefundQuestion(of input: TransitionInput, now: Int64, in transaction: any StateTransaction) throws {
        guard let transactionId = ConsumptionRequestRule.transactionId(concernedBy: input) else { return }
        let kept = try transaction.consumptionRequests(transactionId: transactionId)
        if let changed = ConsumptionRequestRule.apply(input, to: kept, now: now) { try transaction.save(changed) }
    }

    /// What the customer did after a retention answer, when `input` tells it
    /// (``RetentionOutcomeRule``), given to the purchase's answers in the input's transaction.
    private static func settleRetentionOffers(of input: TransitionInput, in transaction: any StateTransaction) throws {
        guard let outcome = RetentionOutcomeRule.outcome(of: input), let id = input.originalTransactionId else { return }
        try transaction.settleRetentionOffers(originalTransactionId: id, outcome: outcome)
    }

    /// When `purchase` was migrated from another one (its transaction's
    /// `previousOriginalTransactionId`), ends that one in the same transaction: it becomes
    /// `migrated`, and its `migrated` event joins the input's. Nothing once the link is stored.
    private static func endMigratedPurchase(
        of purchase: SubscriptionSnapshot, input: TransitionInput, policy: TransitionPolicy, in transaction: any StateTransaction
    ) throws -> [EntitlementEvent] {
        guard let previousId = purchase.previousOriginalTransactionId else { return [] }
        let previous = try transaction.subscription(originalTransactionId: previousId)
        guard let (ended, events) = SubscriptionStateMachine.migrate(
            previous, previousId: previousId, to: purchase, input: input, policy: policy)
        else { return [] }
        try transaction.save(ended)
        return events
    }

    /// The message for an outbox row; first delivery and redelivery both build it here,
    /// so a redelivered event is the same bytes with the same headers.
    package static func message(for entry: OutboxEntry) -> OutputMessage {
        var headers = [
            OutputMessage.Header(.eventId, entry.eventId),
            OutputMessage.Header(.eventType, entry.eventType),
        ]
        if let environment = entry.environment { headers.append(.init(.environment, environment)) }
        if let productId = entry.productId { headers.append(.init(.productId, productId)) }
        return OutputMessage(key: Array(entry.key.utf8), value: entry.payload, headers: headers)
    }

    public var tickInterval: Duration? { options.expirySweep > .zero ? options.expirySweep : nil }

    public func tick() async throws -> RecordBatch? {
        try sweep(limit: options.sweepLimit)
    }

    /// One expiry sweep: in ONE store transaction, every purchase with a period or grace
    /// period that ended at or before `instant` minus `expiryLeeway` and that no input has
    /// moved past yet is advanced across those boundaries
    /// (`SubscriptionStateMachine/advance(_:through:policy:)`), and the resulting events go
    /// to the outbox. Returns records carrying those events (no source position), to be
    /// delivered and then passed to ``acknowledge(_:)``; nil when nothing ended.
    ///
    /// - Parameters:
    ///   - instant: the current time in ms since 1970 (default: the options' clock).
    ///   - limit: most purchases moved; call again while it returns records to drain a backlog.
    public func sweep(at instant: Int64? = nil, limit: Int) throws -> RecordBatch? {
        let store = try handle.store()
        let now = instant ?? options.clock()
        // `instant` may come from a command line (`signet expire --at`): saturate, never trap.
        let (difference, overflow) = now.subtractingReportingOverflow(options.expiryLeeway.clampedMilliseconds)
        let cutoff = overflow ? Int64.min : difference
        let policy = options.policy
        let names = store.entitlementNames
        let produced: [(events: [EntitlementEvent], entries: [OutboxEntry])] = try store.withTransaction { transaction in
            var produced: [(events: [EntitlementEvent], entries: [OutboxEntry])] = []
            for snapshot in try transaction.subscriptionsDue(atOrBefore: cutoff, limit: limit) {
                let (next, changes) = SubscriptionStateMachine.advance(snapshot, through: cutoff, policy: policy)
                guard next != snapshot else { continue }
                try transaction.save(next)
                guard !changes.isEmpty else { continue }
                let events = names.annotated(changes)
                let inputKey = "clock:\(next.originalTransactionId):\(next.evaluatedAt)"
                produced.append((events, try Self.append(events, inputKey: inputKey, createdAt: now, to: transaction)))
            }
            return produced
        }
        FaultInjection.point("after_state_commit")
        guard !produced.isEmpty else { return nil }
        let records = produced.map { events, entries in
            var record = Record(raw: [], position: SourcePosition(stream: "clock", offset: entries.first?.sequence ?? 0))
            record.outputs = entries.map(Self.message(for:))
            record[OutboxSequencesPart.self] = entries.map(\.sequence)
            record[EntitlementEventsPart.self] = events
            record[StateAppliedPart.self] = true
            return record
        }
        return RecordBatch(records: records)
    }

    /// Puts events in the outbox; the entries describe the rows as stored.
    private static func append(
        _ events: [EntitlementEvent], inputKey: String, createdAt: Int64, to transaction: any StateTransaction
    ) throws -> [OutboxEntry] {
        try events.map { event in
            let payload = event.json
            let sequence = try transaction.appendEvent(event, payload: payload, inputKey: inputKey, createdAt: createdAt)
            return OutboxEntry(
                sequence: sequence, eventId: event.eventId, eventType: event.type.rawValue,
                key: event.messageKey, environment: event.environment,
                productId: event.productId, payload: payload)
        }
    }

    public func acknowledge(_ batch: RecordBatch) async throws {
        let store = try handle.store()
        var sequences: [Int64] = []
        for record in batch.records {
            if let delivered = record[OutboxSequencesPart.self] { sequences.append(contentsOf: delivered) }
        }
        let now = WallClock.milliseconds()
        try store.markDelivered(sequences, at: now)
        try handle.pruneIfDue(retention: options.retention, interval: options.pruneInterval, now: now)
    }

    public func undeliveredOutputs() async throws -> RecordBatch? {
        let entries = try handle.store().undeliveredEvents()
        guard !entries.isEmpty else { return nil }
        let records = entries.map { entry in
            var record = Record(raw: [], position: SourcePosition(stream: "outbox", offset: entry.sequence))
            record.outputs = [Self.message(for: entry)]
            record[OutboxSequencesPart.self] = [entry.sequence]
            record[StateAppliedPart.self] = true
            return record
        }
        return RecordBatch(records: records, isRedelivery: true)
    }

}

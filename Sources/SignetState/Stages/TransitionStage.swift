import SignetCore
import SignetJWS
import Synchronization

/// `transition`: moves each purchase through its state machine and publishes the
/// entitlement changes through a transactional outbox.
///
/// Per batch, in ONE store transaction: the authoritative duplicate check, the state
/// changes, the dedupe keys and the outgoing events (outbox rows). Only after the commit
/// are the events put on the records (key = originalTransactionId, value = event JSON,
/// headers `signet-event-id`, `signet-event-type`, `signet-environment`,
/// `signet-product-id`). ``acknowledge(_:)`` marks them delivered once every sink acked,
/// and ``undeliveredOutputs()`` hands back what a crash left undelivered, byte for byte.
public final class TransitionStage: Stage {
    public let name = "transition"

    /// Settings of the stage besides the store.
    public struct Options: Sendable {
        public var policy = TransitionPolicy()
        /// Used when no `dedupe` stage computed a key for the record.
        public var dedupeKey = DedupeKeyKind.notificationUUID
        /// How long dedupe keys are kept (Apple retries for up to three days).
        public var retention: Duration = .seconds(30 * 86_400)
        /// How often old keys and delivered outbox rows are pruned.
        public var pruneInterval: Duration = .seconds(60)

        public init() {}
    }

    public let options: Options
    private let handle: StoreHandle

    /// A stage over a store the caller owns (embedding, tests).
    public init(store: any StateStore, options: Options = Options()) {
        self.handle = StoreHandle(.instance(store))
        self.options = options
    }

    /// A stage over a store resource of the pipeline (`stores:`), which the runner opens.
    public init(resource: StateStoreResource, options: Options = Options()) {
        self.handle = StoreHandle(.resource(resource))
        self.options = options
    }

    public func open() async throws { try handle.open() }
    public func close() async throws { try handle.close() }

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
        var work: [(index: Int, input: TransitionInput, key: String)] = []
        work.reserveCapacity(batch.count)
        for index in batch.records.indices where batch.records[index].isActive {
            guard let payload = batch.records[index][VerifiedPayloadKey.self] else {
                batch.records[index].reject(
                    RecordRejection(.missingTransaction, "no verified payload: put `verify` before `transition`"), stage: name)
                continue
            }
            let input = TransitionInput(payload)
            let key = batch.records[index][DedupeKeyPart.self] ?? options.dedupeKey.key(for: input)
            work.append((index, input, key))
        }
        guard !work.isEmpty else { return }

        let policy = options.policy
        let now = WallClock.milliseconds()
        let outcomes: [Outcome] = try store.withTransaction { transaction in
            var seen = Set<String>(minimumCapacity: work.count)
            var outcomes: [Outcome] = []
            outcomes.reserveCapacity(work.count)
            for item in work {
                guard seen.insert(item.key).inserted else {
                    outcomes.append(.duplicate)  // its first copy in this batch carries the events
                    continue
                }
                if try transaction.containsKey(item.key) {
                    let pending = try transaction.undeliveredEvents(inputKey: item.key)
                    outcomes.append(pending.isEmpty ? .duplicate : .redeliver(pending))
                    continue
                }
                let previous = try item.input.originalTransactionId.flatMap {
                    try transaction.subscription(originalTransactionId: $0)
                }
                switch SubscriptionStateMachine.apply(item.input, to: previous, policy: policy) {
                case .ignored:
                    try transaction.recordKey(item.key, seenAt: now)
                    outcomes.append(.applied([], []))
                case .rejected(let rejection):
                    outcomes.append(.rejected(rejection))
                case .applied(let snapshot, let events):
                    if let snapshot { try transaction.save(snapshot) }
                    try transaction.recordKey(item.key, seenAt: now)
                    var entries: [OutboxEntry] = []
                    for event in events {
                        let payload = event.json
                        let sequence = try transaction.appendEvent(event, payload: payload, inputKey: item.key, createdAt: now)
                        entries.append(OutboxEntry(
                            sequence: sequence, eventId: event.eventId, eventType: event.type.rawValue,
                            key: event.originalTransactionId ?? "", environment: event.environment,
                            productId: event.productId, payload: payload))
                    }
                    outcomes.append(.applied(events, entries))
                }
            }
            return outcomes
        }
        FaultInjection.point("after_state_commit")

        for (item, outcome) in zip(work, outcomes) {
            switch outcome {
            case .duplicate:
                batch.records[item.index].drop(reason: "duplicate")
            case .redeliver(let entries):
                // Same bytes, ids and order as first committed; `acknowledge` marks them delivered.
                batch.records[item.index][OutboxSequencesPart.self] = entries.map(\.sequence)
                batch.records[item.index].outputs = entries.map(Self.message(for:))
            case .rejected(let rejection):
                batch.records[item.index].reject(rejection, stage: name)
            case .applied(let events, let entries):
                batch.records[item.index][StateAppliedPart.self] = true
                batch.records[item.index][EntitlementEventsPart.self] = events
                batch.records[item.index][OutboxSequencesPart.self] = entries.map(\.sequence)
                // The events replace the verified document `verify` put there: downstream of
                // `transition` a record publishes what changed, nothing else.
                batch.records[item.index].outputs = entries.map(Self.message(for:))
            }
        }
    }

    /// The message for an outbox row; first delivery and redelivery both build it here,
    /// so a redelivered event is the same bytes with the same headers.
    public static func message(for entry: OutboxEntry) -> OutputMessage {
        var headers = [
            OutputMessage.Header("signet-event-id", entry.eventId),
            OutputMessage.Header("signet-event-type", entry.eventType),
        ]
        if let environment = entry.environment { headers.append(.init("signet-environment", environment)) }
        if let productId = entry.productId { headers.append(.init("signet-product-id", productId)) }
        return OutputMessage(key: Array(entry.key.utf8), value: entry.payload, headers: headers)
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

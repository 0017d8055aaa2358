/// What delivering one batch asks of the sinks, worked out before anything is written:
/// each sink's messages, the dead letters of rejected records, the counts by outcome and
/// the source positions the commit covers.
///
/// Pure (no I/O), so ``PipelineRunner`` reads as plan → write → commit, and the
/// accounting is tested without sinks. After the writes, ``settle(refusals:)`` turns what
/// the sinks refused for good into dead letters and counts only what they accepted, so
/// the run summary and `/metrics` agree.
struct DeliveryPlan: Sendable {
    /// The messages one sink gets, in batch order.
    struct Share: Sendable {
        /// The sink's index in ``Pipeline/sinks``.
        var sink: Int
        var messages: [OutputMessage]
        /// For each message, its index in ``DeliveryPlan/outputs``.
        var outputs: [Int]
    }

    /// One output message of an active record.
    struct Output: Sendable {
        /// The record's index in the batch.
        var record: Int
        /// Its `signet-event-type` header, if it is an event.
        var eventType: String?
    }

    /// What the sinks accepted, once the writes returned.
    struct Settlement: Sendable {
        /// Messages acknowledged, by sink name, and their sum.
        var deliveredBySink: [String: Int] = [:]
        var delivered = 0
        /// Events accepted by at least one of their sinks, by type (`signet_events_total`).
        var publishedEventTypes: [String: Int] = [:]
        /// One dead letter per message a sink refused for good (stage `sinks.<name>`).
        var refusedDeadLetters: [OutputMessage] = []
    }

    let batch: RecordBatch
    let sinkNames: [String]
    /// What each sink takes, by index in ``sinkNames``.
    let sinkInputs: [SinkInput]
    let deadLetter: DeadLetterOutput
    private(set) var shares: [Share] = []
    private(set) var outputs: [Output] = []
    /// Dead letters of the records a stage rejected.
    private(set) var deadLetters: [OutputMessage] = []
    /// Passed, rejected and dropped records, by reason (delivery counts come from ``settle(refusals:)``).
    private(set) var counts = RunSummary()
    /// What to commit: every record that came from the source (a ticking stage's generated
    /// records have none), with its final status and parts.
    private(set) var outcomes: [RecordOutcome] = []

    /// - Parameter sinkInputs: each sink's ``SinkInput`` (every sink takes outputs when omitted).
    init(batch: RecordBatch, sinkNames: [String], sinkInputs: [SinkInput]? = nil, deadLetter: DeadLetterOutput) {
        self.batch = batch
        self.sinkNames = sinkNames
        let sinkInputs = sinkInputs ?? sinkNames.map { _ in .outputs }
        self.sinkInputs = sinkInputs
        self.deadLetter = deadLetter
        var shares = sinkNames.indices.map { Share(sink: $0, messages: [], outputs: []) }
        let rawSinks = sinkNames.indices.filter { sinkInputs[$0] == .verifiedRaw }
        for (index, record) in batch.records.enumerated() {
            let generated = record[GeneratedRecordPart.self] == true
            if !generated { outcomes.append(RecordOutcome(record)) }
            if !rawSinks.isEmpty, record[ForwardablePart.self] == true {
                let output = outputs.count
                outputs.append(Output(record: index, eventType: nil))
                for sink in rawSinks {
                    shares[sink].messages.append(OutputMessage(value: record.raw))
                    shares[sink].outputs.append(output)
                }
            }
            switch record.status {
            case .active:
                if !generated { counts.passed += 1 }
                for message in record.outputs {
                    let output = outputs.count
                    outputs.append(Output(record: index, eventType: message.header(.eventType)))
                    for sink in sinkNames.indices where sinkInputs[sink] == .outputs && message.isRouted(to: sinkNames[sink]) {
                        shares[sink].messages.append(message)
                        shares[sink].outputs.append(output)
                    }
                }
            case .rejected(let rejection, let stage):
                counts.rejected += 1
                counts.rejectedByReason[rejection.reason.rawValue, default: 0] += 1
                deadLetters.append(deadLetter.message(for: record, rejection: rejection, stage: stage))
            case .dropped(let reason):
                counts.dropped += 1
                counts.droppedByReason[reason, default: 0] += 1
            }
        }
        self.shares = shares.filter { !$0.messages.isEmpty }
    }

    /// The accounting after the writes: `refusals[i]` are the refusals of `shares[i]`'s sink.
    func settle(refusals: [[UndeliverableMessages.Refusal]]) -> Settlement {
        var settlement = Settlement()
        var accepted = Array(repeating: false, count: outputs.count)
        for (share, refused) in zip(shares, refusals) {
            let name = sinkNames[share.sink]
            var refusedHere = Array(repeating: false, count: share.messages.count)
            for refusal in refused where share.messages.indices.contains(refusal.index) && !refusedHere[refusal.index] {
                refusedHere[refusal.index] = true
                let record = batch.records[outputs[share.outputs[refusal.index]].record]
                settlement.refusedDeadLetters.append(
                    deadLetter.message(for: record, rejection: refusal.rejection, stage: "sinks.\(name)"))
            }
            let count = refusedHere.count { !$0 }
            settlement.deliveredBySink[name, default: 0] += count
            settlement.delivered += count
            for (position, output) in share.outputs.enumerated() where !refusedHere[position] { accepted[output] = true }
        }
        for (output, wasAccepted) in zip(outputs, accepted) where wasAccepted {
            if let type = output.eventType { settlement.publishedEventTypes[type, default: 0] += 1 }
        }
        return settlement
    }
}

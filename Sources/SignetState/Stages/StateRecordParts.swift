public import SignetCore

/// The dedupe key the `dedupe` stage computed for a record; `transition` uses the same
/// key for its authoritative check, so both stages agree on what a duplicate is.
package enum DedupeKeyPart: RecordPartKey {
    public typealias Value = String
}

/// Set by `transition` on records whose dedupe key it committed together with their
/// effect, so `dedupe` does not record the key again on acknowledgement.
package enum StateAppliedPart: RecordPartKey {
    public typealias Value = Bool
}

/// The events `transition` emitted for a record (also in `outputs` as JSON), for a stage of
/// an embedding service placed after it that wants the typed values
/// (`record[EntitlementEventsPart.self]`). Events redelivered from the outbox after a crash
/// carry only their JSON; a sink reads every event with ``EntitlementEventSink``.
public enum EntitlementEventsPart: RecordPartKey {
    /// The events, in the order the stage emitted them.
    public typealias Value = [EntitlementEvent]
}

/// The outbox sequence numbers behind a record's outputs; `acknowledge` marks them delivered.
package enum OutboxSequencesPart: RecordPartKey {
    public typealias Value = [Int64]
}

/// What `dedupe` derived from a record's verified payload, kept so `transition` does not
/// derive it again.
package enum TransitionInputPart: RecordPartKey {
    public typealias Value = TransitionInput
}

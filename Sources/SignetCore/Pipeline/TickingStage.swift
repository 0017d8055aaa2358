/// A stage that also produces records as time passes, not only when input arrives (the
/// `transition` stage's expiry sweep: access that ends without any notification).
///
/// The runner calls ``tick()`` about every ``tickInterval`` (the first one interval after the
/// start) in the stage's own task, between batches, so a tick never runs concurrently with
/// ``Stage/process(_:)``. The records a tick returns have no source position: they pass
/// through the later stages, the sinks and every stage's ``Stage/acknowledge(_:)`` like a
/// batch read from the source, but nothing is committed to the source for them (the
/// runner marks them with `GeneratedRecordPart`). A stage that needs them to survive a
/// crash keeps them in its outbox (``Stage/undeliveredOutputs()``) like any other output.
public protocol TickingStage: Stage {
    /// How often the runner calls ``tick()``; nil or zero: never.
    var tickInterval: Duration? { get }
    /// Produces records from the passage of time; nil or an empty batch: nothing to publish.
    func tick() async throws -> RecordBatch?
}

/// Set by the runner on records a ``TickingStage`` generated: they are delivered and
/// acknowledged, but have no source position to commit and do not count as read or passed.
package enum GeneratedRecordPart: RecordPartKey {
    public typealias Value = Bool
}

/// A step of a pipeline: decode, verify, dedupe, transition, fan-out, or your own.
///
/// The runner calls ``process(_:)`` once per batch, batches in source order, never
/// two batches at once for the same stage; different stages work on different batches
/// concurrently. A stage rejects a record (``Record/reject(_:stage:)``) for bad input and
/// throws only for failures of its own infrastructure (a database that is gone), which
/// stops the run without committing the batch.
public protocol Stage: Sendable {
    /// The type name this stage is registered under (used in dead-letter records and logs).
    var name: String { get }
    /// Opens resources (files, databases). Called once before the first batch.
    func open() async throws
    /// Processes the active records of a batch in place.
    func process(_ batch: inout RecordBatch) async throws
    /// Called after every sink acknowledged the batch's outputs, before the source commits.
    /// A transactional outbox marks its events delivered here.
    func acknowledge(_ batch: RecordBatch) async throws
    /// Records whose outputs an earlier run committed but never saw acknowledged (a
    /// transactional outbox). Before reading new input the runner passes them through
    /// the stages after this one, delivers them, and calls ``acknowledge(_:)``; the
    /// batch has ``RecordBatch/isRedelivery`` set and is not committed to the source.
    func undeliveredOutputs() async throws -> RecordBatch?
    /// Releases resources. Called once after the last batch, also after a failure.
    func close() async throws
    /// The run was asked to stop (SIGTERM, ``PipelineRunner/requestStop()``): in-flight batches
    /// still drain, but a stage holding a batch while it waits on the outside world (a
    /// revocation check with backoff) should stop waiting and throw, so the batch is left
    /// uncommitted for the next run instead of delaying the stop. Must return at once.
    func stopRequested()
    /// What the stage declares about itself (``StageTrait``), for the checks other stages make
    /// in ``checkPlacement(_:)``: the same facts a registered stage type's spec declares.
    var traits: Set<StageTrait> { get }
    /// Checks, when the pipeline is built, that the stages around this one give it what it
    /// relies on; throws a ``PipelineWiringError`` that says what is missing.
    func checkPlacement(_ placement: StagePlacement) throws(PipelineWiringError)
}

extension Stage {
    public var traits: Set<StageTrait> { [] }
    public func checkPlacement(_ placement: StagePlacement) throws(PipelineWiringError) {}
    public func open() async throws {}
    public func acknowledge(_ batch: RecordBatch) async throws {}
    public func undeliveredOutputs() async throws -> RecordBatch? { nil }
    public func close() async throws {}
    public func stopRequested() {}
}

/// A stage that looks at one record at a time and keeps no order-dependent state, so
/// the runner may spread a batch over every core.
///
/// Implement ``process(record:)`` and throw a ``RecordRejection`` for bad input.
public protocol RecordStage: Stage {
    /// How many threads may run ``process(record:)`` at once (1 keeps it serial).
    var parallelism: Int { get }
    /// Processes one active record in place, or throws to reject it (its reason code goes to the dead-letter sink).
    func process(record: inout Record) throws(RecordRejection)
}

extension RecordStage {
    public var parallelism: Int { 1 }

    public func process(_ batch: inout RecordBatch) async throws {
        processEachRecord(&batch)
    }

    /// Runs ``process(record:)`` on every active record (on up to ``parallelism`` threads) and
    /// rejects those that throw: what `process(_:)` does, for a stage that overrides it
    /// to look at the batch afterwards.
    public func processEachRecord(_ batch: inout RecordBatch) {
        let stageName = name
        batch.records.concurrentUpdate(maxThreads: parallelism) { record in
            guard record.isActive else { return }
            do throws(RecordRejection) {
                try process(record: &record)
            } catch {
                record.reject(error, stage: stageName)
            }
        }
    }
}

/// Records that travel together: one read from the source, one commit back to it.
public struct RecordBatch: Sendable {
    /// The records, in source order.
    public var records: [Record]
    /// Records that are already delivered (outbox redelivery) and must not be committed to the source.
    public var isRedelivery: Bool

    /// A batch of `records`.
    public init(records: [Record], isRedelivery: Bool = false) {
        self.records = records
        self.isRedelivery = isRedelivery
    }

    /// How many records it holds, active or not.
    public var count: Int { records.count }

    /// Calls `body` for every record still active, in order.
    public mutating func forEachActive(_ body: (inout Record) throws -> Void) rethrows {
        for index in records.indices where records[index].isActive {
            try body(&records[index])
        }
    }
}

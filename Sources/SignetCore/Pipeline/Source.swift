/// Where records come from: stdin, a file, a Kafka topic, or your own.
///
/// The runner pulls batches with ``nextBatch(maxRecords:)`` and calls ``commit(_:)``
/// for each batch, in the order the batches were read, only after every sink
/// acknowledged that batch's outputs (or the dead-letter sink its rejects). A source
/// therefore resumes after a crash from the last committed position: at-least-once.
public protocol Source: Sendable {
    /// Opens the input (files, connections, consumer group membership).
    func open() async throws
    /// Up to `maxRecords` records, or nil once the input is exhausted.
    /// May return an empty batch when nothing arrived in time (a live stream). Waits by
    /// suspending, never by blocking its thread: the runner calls it on the first stage's
    /// executor, so a blocking read belongs on a thread of the source's own (as the line
    /// sources and Kafka's poll do).
    func nextBatch(maxRecords: Int) async throws -> [Record]?
    /// Marks these records as fully handled, so a restart does not read them again.
    func commit(_ positions: [SourcePosition]) async throws
    /// What the runner calls once every sink and the dead-letter sink acknowledged a batch:
    /// each record that came from the source, in order, with what became of it and what the
    /// stages learned about it. A source that answers whoever sent its records (the webhook
    /// answers each request) implements it; the default commits the positions (``commit(_:)``).
    func commit(outcomes: [RecordOutcome]) async throws
    /// Asks the source to stop producing: the next `nextBatch` returns nil.
    func stop() async
    /// Releases the input. Called once, after the last commit.
    func close() async throws
}

extension Source {
    public func open() async throws {}
    public func commit(_ positions: [SourcePosition]) async throws {}
    public func commit(outcomes: [RecordOutcome]) async throws { try await commit(outcomes.map(\.position)) }
    public func close() async throws {}
}

/// Where outputs go: stdout, a file, a Kafka topic, or your own.
public protocol Sink: Sendable {
    /// What the sink is given: the records' output messages (events, documents) routed to
    /// it, or the raw bytes of every record a stage verified (``SinkInput/verifiedRaw``).
    var input: SinkInput { get }
    /// Opens the destination (connections, files) before the first write; throwing stops the run before it reads.
    func open() async throws
    /// Delivers the messages and returns once the destination acknowledged them all
    /// (written and flushed, fsynced, or acked by the broker). Throwing means none of
    /// them may be considered delivered; the runner does not commit the batch.
    func write(_ messages: [OutputMessage]) async throws
    /// Flushes and closes the destination after the last write.
    func close() async throws
}

extension Sink {
    public var input: SinkInput { .outputs }
    /// Does nothing: a sink with nothing to open.
    public func open() async throws {}
    /// Does nothing: a sink with nothing to close.
    public func close() async throws {}
}

/// What a sink receives from each batch.
public enum SinkInput: Sendable, Hashable {
    /// The output messages of the batch's passed records that are routed to the sink.
    case outputs
    /// The exact input bytes (``Record/raw``) of every record a stage marked as a verified
    /// signed payload (``ForwardablePart``), in batch order, whatever became of it later
    /// (passed, rejected, or dropped as a repeat: a record read again after a crash between
    /// the state commit and the sinks' acknowledgement is such a repeat, and must still be
    /// passed on): what a `forward` sink passes on to other stacks. Output messages are never
    /// routed to such a sink.
    case verifiedRaw
}

/// Marks a record whose raw bytes are a signed payload a stage verified (the `verify` stage
/// sets it on notifications), for sinks whose input is ``SinkInput/verifiedRaw``.
public enum ForwardablePart: RecordPartKey {
    /// Always `true` when set.
    public typealias Value = Bool
}

/// A sink that writes to a named file and can open it again: `signet run` calls
/// ``reopen()`` on SIGHUP, after logrotate moved the file away (`postrotate`).
public protocol ReopenableSink: Sink {
    /// Closes the file and opens it again by name; writes wait meanwhile.
    func reopen() async throws
}

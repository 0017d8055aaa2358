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
    /// May return an empty batch when nothing arrived in time (a live stream).
    func nextBatch(maxRecords: Int) async throws -> [Record]?
    /// Marks these records as fully handled, so a restart does not read them again.
    func commit(_ positions: [SourcePosition]) async throws
    /// Asks the source to stop producing: the next `nextBatch` returns nil.
    func stop() async
    /// Releases the input. Called once, after the last commit.
    func close() async throws
}

extension Source {
    public func open() async throws {}
    public func commit(_ positions: [SourcePosition]) async throws {}
    public func close() async throws {}
}

/// Where outputs go: stdout, a file, a Kafka topic, or your own.
public protocol Sink: Sendable {
    func open() async throws
    /// Delivers the messages and returns once the destination acknowledged them all
    /// (written and flushed, fsynced, or acked by the broker). Throwing means none of
    /// them may be considered delivered; the runner does not commit the batch.
    func write(_ messages: [OutputMessage]) async throws
    /// Hands the messages over, in order, and returns what to await for their
    /// acknowledgement. The runner submits one batch at a time in source order and may
    /// submit the next batch before awaiting this one, so a sink whose acknowledgements
    /// take a network round trip (Kafka) keeps messages flowing meanwhile. Commits still
    /// wait for every acknowledgement, in order. The default writes, then has nothing to await.
    func submit(_ messages: [OutputMessage]) async throws -> SinkAcknowledgement
    func close() async throws
}

extension Sink {
    public func open() async throws {}
    public func close() async throws {}
    public func submit(_ messages: [OutputMessage]) async throws -> SinkAcknowledgement {
        try await write(messages)
        return .immediate
    }
}

/// What a sink returns from ``Sink/submit(_:)``: the wait for the acknowledgement of
/// what was submitted. Throwing from it means the submission was not delivered.
public struct SinkAcknowledgement: Sendable {
    private let wait: @Sendable () async throws -> Void
    /// Whether the submission was already acknowledged when `submit` returned.
    public let isImmediate: Bool

    public init(_ wait: @escaping @Sendable () async throws -> Void) {
        self.wait = wait
        self.isImmediate = false
    }

    private init() {
        self.wait = {}
        self.isImmediate = true
    }

    /// Already acknowledged (the write itself was the acknowledgement).
    public static let immediate = SinkAcknowledgement()

    /// Returns once the submitted messages were acknowledged.
    public func acknowledged() async throws { try await wait() }
}

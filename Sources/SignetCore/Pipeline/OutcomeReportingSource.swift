/// What became of one committed record: its position and its final status (passed every
/// stage, dead-lettered with a reason, or dropped on purpose).
public struct RecordOutcome: Sendable, Equatable {
    public var position: SourcePosition
    public var status: Record.Status

    public init(position: SourcePosition, status: Record.Status) {
        self.position = position
        self.status = status
    }
}

/// A source that answers whoever sent its records (the webhook answers each request) and
/// wants to say what became of each one. The runner calls ``commit(outcomes:)`` instead of
/// ``Source/commit(_:)``, at the same moment (after every sink and the dead-letter sink
/// acknowledged) and with the same records, in order.
public protocol OutcomeReportingSource: Source {
    func commit(outcomes: [RecordOutcome]) async throws
}

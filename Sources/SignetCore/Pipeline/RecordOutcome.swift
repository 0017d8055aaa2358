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

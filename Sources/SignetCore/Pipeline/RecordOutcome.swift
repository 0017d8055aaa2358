/// What became of one committed record: its position, its final status (passed every
/// stage, dead-lettered with a reason, or dropped on purpose) and what the stages learned
/// about it (its parts).
///
/// A source that answers whoever sent a record (the webhook) reads its answer from the
/// parts: what the stages checked, instead of parsing the input again.
public struct RecordOutcome: Sendable {
    /// Where the record was read.
    public var position: SourcePosition
    /// What became of it: passed (active), rejected or dropped.
    public var status: Record.Status
    @usableFromInline var parts: RecordParts

    /// An outcome without parts (a source committing positions alone).
    public init(position: SourcePosition, status: Record.Status) {
        self.position = position
        self.status = status
        self.parts = RecordParts()
    }

    /// The outcome of `record` as the last stage left it.
    init(_ record: Record) {
        self.position = record.position
        self.status = record.status
        self.parts = record.parts
    }

    /// The part a stage put on the record under `key` (see ``Record/subscript(_:)``).
    @inlinable
    public subscript<Key: RecordPartKey>(_ key: Key.Type) -> Key.Value? {
        parts[key]
    }
}

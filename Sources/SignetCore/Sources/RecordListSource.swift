import Synchronization

/// A source that serves records held in memory, in order, then the end of input: the cases
/// of `signet test`, the inputs `signet dead-letters replay` read back.
package final class RecordListSource: Source {
    private let records: [Record]
    private let next = Mutex(0)

    public init(records: [Record]) {
        self.records = records
    }

    /// Lines as records `stream:1`, `stream:2`, ...
    public convenience init(lines: [[UInt8]], stream: String) {
        self.init(records: lines.enumerated().map { index, line in
            Record(raw: line, position: SourcePosition(stream: stream, offset: Int64(index + 1)))
        })
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        next.withLock { next in
            guard next < records.count else { return nil }
            let end = min(records.count, next + max(1, maxRecords))
            defer { next = end }
            return Array(records[next..<end])
        }
    }

    public func stop() async {
        next.withLock { $0 = records.count }
    }
}

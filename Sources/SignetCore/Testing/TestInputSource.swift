import Synchronization

/// A source that serves fixed lines, for `signet test`: records `NAME:1`, `NAME:2`, ...
/// in order, then the end of input.
public final class TestInputSource: Source {
    private let stream: String
    private let lines: [[UInt8]]
    private let next = Mutex(0)

    public init(lines: [[UInt8]], stream: String) {
        self.lines = lines
        self.stream = stream
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        next.withLock { next in
            guard next < lines.count else { return nil }
            let end = min(lines.count, next + max(1, maxRecords))
            defer { next = end }
            return (next..<end).map { index in
                Record(raw: lines[index], position: SourcePosition(stream: stream, offset: Int64(index + 1)))
            }
        }
    }

    public func stop() async {
        next.withLock { $0 = lines.count }
    }
}

public import SignetCore
import Synchronization

/// Serves `lines` (or an endless stream) as records `stream:1`, `stream:2`, ... and records commits.
public final class MemorySource: Source {
    public let stream: String
    private let lines: [[UInt8]]?
    private let log: EventLog?
    private struct State {
        var next = 0
        var stopped = false
        var commits: [[SourcePosition]] = []
        var opened = 0
        var closed = 0
        var batchesServed = 0
    }
    private let state = Mutex(State())

    public init(lines: [String], stream: String = "mem", log: EventLog? = nil) {
        self.lines = lines.map { Array($0.utf8) }
        self.stream = stream
        self.log = log
    }

    public init(rawLines: [[UInt8]], stream: String = "mem", log: EventLog? = nil) {
        self.lines = rawLines
        self.stream = stream
        self.log = log
    }

    /// An endless source of `r<n>` lines that ends only when stopped.
    public init(endlessStream stream: String = "live", log: EventLog? = nil) {
        self.lines = nil
        self.stream = stream
        self.log = log
    }

    public func open() async throws { state.withLock { $0.opened += 1 } }
    public func close() async throws { state.withLock { $0.closed += 1 } }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        let batch: [Record]? = state.withLock { state in
            if state.stopped { return nil }
            var records: [Record] = []
            while records.count < maxRecords {
                let raw: [UInt8]
                if let lines {
                    guard state.next < lines.count else { break }
                    raw = lines[state.next]
                } else {
                    raw = Array("r\(state.next + 1)".utf8)
                }
                state.next += 1
                records.append(Record(raw: raw, position: SourcePosition(stream: stream, offset: Int64(state.next))))
            }
            if records.isEmpty { return nil }
            state.batchesServed += 1
            return records
        }
        if let batch { log?.append("read:" + batch.map { String($0.position.offset) }.joined(separator: ",")) }
        return batch
    }

    public func commit(_ positions: [SourcePosition]) async throws {
        state.withLock { $0.commits.append(positions) }
        log?.append("commit:" + positions.map { String($0.offset) }.joined(separator: ","))
    }

    public func stop() async { state.withLock { $0.stopped = true } }

    public var commits: [[SourcePosition]] { state.withLock { $0.commits } }
    public var committedOffsets: [Int64] { commits.flatMap { $0.map(\.offset) } }
    public var openCount: Int { state.withLock { $0.opened } }
    public var closeCount: Int { state.withLock { $0.closed } }
    public var readCount: Int { state.withLock { $0.next } }
}

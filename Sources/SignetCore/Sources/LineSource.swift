import Foundation
import Synchronization

/// NDJSON input from standard input or a file: one record per line.
///
/// Lines longer than `maxLineBytes` become records that are already rejected with
/// `line_too_large` (their first bytes are kept for the dead-letter sink), so one bad
/// line never stops a run. For files, an optional checkpoint records the byte offset
/// of the last committed line, and a restart resumes there.
public final class LineSource: Source {
    /// How lines are read.
    public struct Options: Sendable {
        /// Longest accepted line in bytes (Apple's notifications are a few KiB).
        public var maxLineBytes: Int = 1 << 20
        /// Skip empty and whitespace-only lines instead of rejecting them.
        public var skipBlankLines: Bool = true
        /// Where a file source keeps its committed position (nil: always from the start).
        public var checkpointPath: String?
        /// 1 MiB lines, blank lines skipped, no checkpoint.
        public init() {}
    }

    /// The stream name used in positions (`stdin` or the file path).
    public let stream: String
    private let path: String?
    private let options: Options
    /// Reads block (a pipe, a slow disk): the reader runs here, off the cooperative pool.
    private let executor = BlockingExecutor(label: "signet.line-source")
    /// The checkpoint's write and fsync: off the cooperative pool the runner commits from, and
    /// apart from the reader's executor, whose read may wait for input as long as it likes.
    private let checkpoints = BlockingExecutor(label: "signet.line-source.checkpoint")
    private let stopped = Atomic<Bool>(false)
    private let state = Mutex<State>(State())

    private struct State: ~Copyable {
        /// Opened and not yet handed to the reading task.
        var reader: LineReader?
        var descriptor: Int32 = -1
        var ownsDescriptor = false
        /// Written to on ``stop()`` so a reader waiting for input wakes at once.
        var wakePipe: (read: Int32, write: Int32) = (-1, -1)
        /// Lines read and not yet handed out, created by the first ``nextBatch(maxRecords:)``.
        var queue: RecordQueue<Record>?
        var reading: Task<Void, Never>?
    }

    /// Reads standard input.
    public static func standardInput(options: Options = Options()) -> LineSource {
        LineSource(stream: "stdin", path: nil, options: options)
    }

    /// Reads the file at `path`.
    public convenience init(path: String, options: Options = Options()) {
        self.init(stream: path, path: path, options: options)
    }

    private init(stream: String, path: String?, options: Options) {
        self.stream = stream
        self.path = path
        self.options = options
    }

    public func open() async throws {
        var startLine: Int64 = 0
        var startOffset: Int64 = 0
        let fd: Int32
        if let checkpointPath = options.checkpointPath {
            // Fail now, not after the first batch was delivered, if the checkpoint cannot be kept.
            let folder = (checkpointPath as NSString).deletingLastPathComponent
            if !folder.isEmpty {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
        }
        if let path {
            fd = Foundation.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SourceError("cannot open '\(path)': \(String(cString: strerror(errno)))") }
            if let checkpoint = try Checkpoint.load(options.checkpointPath), checkpoint.stream == stream {
                guard lseek(fd, off_t(checkpoint.byteOffset), SEEK_SET) >= 0 else {
                    Foundation.close(fd)
                    throw SourceError("cannot seek '\(path)' to checkpoint \(checkpoint.byteOffset)")
                }
                startLine = checkpoint.line
                startOffset = checkpoint.byteOffset
            }
        } else {
            fd = STDIN_FILENO
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let cause = String(cString: strerror(errno))
            if path != nil { Foundation.close(fd) }
            throw SourceError("cannot create the line source's wake pipe: \(cause)")
        }
        // Not inherited by a child the process starts (the same rule as the input file's O_CLOEXEC).
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let reader = LineReader(fd: fd, maxLineBytes: options.maxLineBytes, startLine: startLine, startOffset: startOffset)
        let owns = path != nil
        state.withLock {
            $0.reader = reader
            $0.descriptor = fd
            $0.ownsDescriptor = owns
            $0.wakePipe = (pipeFDs[0], pipeFDs[1])
        }
    }

    /// The next lines a reading task queued (it starts with the first call): everything read
    /// so far, at most `maxRecords`, without waiting for more once one line is in.
    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        guard let queue = startReading(capacity: maxRecords) else { return nil }
        return try await queue.nextElements(max: maxRecords)
    }

    /// The queue the reading task fills; nil when not opened or stopped before reading.
    private func startReading(capacity: Int) -> RecordQueue<Record>? {
        state.withLock { state -> RecordQueue<Record>? in
            if let queue = state.queue { return queue }
            guard !stopped.load(ordering: .relaxed), let reader = state.reader.take() else { return nil }
            let queue = RecordQueue<Record>(capacity: capacity)
            let wakeFD = state.wakePipe.read
            state.queue = queue
            state.reading = Task(executorPreference: executor) { [self] in
                await read(from: reader, into: queue, chunk: max(1, capacity), wakeFD: wakeFD)
            }
            return queue
        }
    }

    /// The reading task, on `executor`: blocking reads until the end of input or ``stop()``;
    /// each run of lines that is available without waiting goes to `queue` as one send.
    private func read(from reader: LineReader, into queue: RecordQueue<Record>, chunk: Int, wakeFD: Int32) async {
        var reader = reader
        do {
            while true {
                let (records, ended) = try readAvailable(&reader, limit: chunk, wakeFD: wakeFD)
                if !records.isEmpty, await !queue.send(records) { return }
                if ended { break }
            }
            queue.finish()
        } catch {
            queue.finish(failure: error)
        }
    }

    /// The lines available now, at most `limit`, waiting (without limit, until woken by
    /// ``stop()``) only for the first; and whether input ended (or the source stopped).
    private func readAvailable(_ reader: inout LineReader, limit: Int, wakeFD: Int32) throws -> (records: [Record], ended: Bool) {
        var records: [Record] = []
        while records.count < limit {
            if stopped.load(ordering: .relaxed) { return (records, true) }
            switch try reader.next(pollMilliseconds: records.isEmpty ? -1 : 0, wakeFD: wakeFD) {
            case .idle:
                if !records.isEmpty { return (records, false) }
            case .endOfInput:
                return (records, true)
            case .item(.line(let bytes, let number, let endOffset)):
                if options.skipBlankLines, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                records.append(Record(raw: bytes, position: SourcePosition(stream: stream, offset: number, resumeByteOffset: endOffset)))
            case .item(.tooLarge(let prefix, let length, let number, let endOffset)):
                var record = Record(raw: prefix, position: SourcePosition(stream: stream, offset: number, resumeByteOffset: endOffset))
                record[OriginalInputLengthPart.self] = length
                record.reject(
                    RecordRejection(
                        .lineTooLarge,
                        "line \(number) is \(length) bytes, more than max_line_bytes (\(options.maxLineBytes)); "
                            + "its first \(prefix.count) bytes are kept"),
                    stage: "source")
                records.append(record)
            }
        }
        return (records, false)
    }

    public func commit(_ positions: [SourcePosition]) async throws {
        guard let checkpointPath = options.checkpointPath,
            let last = positions.max(by: { $0.offset < $1.offset }), let byteOffset = last.resumeByteOffset
        else { return }
        let checkpoint = Checkpoint(stream: stream, line: last.offset, byteOffset: byteOffset)
        try await checkpoints.run { try checkpoint.save(to: checkpointPath) }
    }

    /// Lines already read are still handed out; then ``nextBatch(maxRecords:)`` returns nil.
    public func stop() async {
        stopped.store(true, ordering: .relaxed)
        let wakeFD = state.withLock { $0.wakePipe.write }
        if wakeFD >= 0 {
            var byte: UInt8 = 1
            _ = Foundation.write(wakeFD, &byte, 1)
        }
    }

    public func close() async throws {
        // The reading task may wait for input or for room: stop it first, then close what it reads.
        await stop()
        let (queue, reading) = state.withLock { ($0.queue, $0.reading) }
        queue?.stop()
        await reading?.value
        state.withLock { state in
            if state.ownsDescriptor, state.descriptor >= 0 { Foundation.close(state.descriptor) }
            if state.wakePipe.read >= 0 {
                Foundation.close(state.wakePipe.read)
                Foundation.close(state.wakePipe.write)
            }
            state.descriptor = -1
            state.wakePipe = (-1, -1)
            state.reader = nil
            state.reading = nil
        }
    }
}

/// A committed read position of a file source.
struct Checkpoint: Codable {
    var stream: String
    var line: Int64
    var byteOffset: Int64

    static func load(_ path: String?) throws -> Checkpoint? {
        guard let path, FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(Checkpoint.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw SourceError("checkpoint '\(path)' is unreadable (\(error)); delete it to start from the beginning")
        }
    }

    /// Writes atomically and durably (``AtomicFile``) so a crash or a power loss leaves the
    /// old or the new checkpoint (Foundation's `.atomic` renames without an fsync: after a
    /// power loss the file could be empty).
    func save(to path: String) throws {
        try AtomicFile.write(try JSONEncoder().encode(self), to: path, what: "the checkpoint")
    }
}

/// A source could not be opened or read.
public struct SourceError: Error, CustomStringConvertible {
    public var description: String
    /// An error saying `description`: what failed and the operator's next step.
    public init(_ description: String) { self.description = description }
}

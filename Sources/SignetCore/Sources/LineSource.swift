import Dispatch
import Foundation
import Synchronization

/// NDJSON input from standard input or a file: one record per line.
///
/// Lines longer than `maxLineBytes` become records that are already rejected with
/// `line_too_large` (their first bytes are kept for the dead-letter sink), so one bad
/// line never stops a run. For files, an optional checkpoint records the byte offset
/// of the last committed line, and a restart resumes there.
public final class LineSource: Source {
    public struct Options: Sendable {
        /// Longest accepted line in bytes (Apple's notifications are a few KiB).
        public var maxLineBytes: Int = 1 << 20
        /// Skip empty and whitespace-only lines instead of rejecting them.
        public var skipBlankLines: Bool = true
        /// Where a file source keeps its committed position (nil: always from the start).
        public var checkpointPath: String?
        public init() {}
    }

    /// The stream name used in positions (`stdin` or the file path).
    public let stream: String
    private let path: String?
    private let options: Options
    /// Reads block (a pipe, a slow disk): off the cooperative pool.
    private let executor = BlockingExecutor(label: "signet.line-source")
    private let stopped = Atomic<Bool>(false)
    private let state = Mutex<State>(State())

    private struct State: ~Copyable {
        var reader: LineReader?
        var ownsDescriptor = false
        var finished = false
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
        let reader = LineReader(fd: fd, maxLineBytes: options.maxLineBytes, startLine: startLine, startOffset: startOffset)
        let owns = path != nil
        state.withLock {
            $0.reader = reader
            $0.ownsDescriptor = owns
        }
    }

    public func nextBatch(maxRecords: Int) async throws -> [Record]? {
        try await executor.run { [self] in try readBatch(maxRecords: maxRecords) }
    }

    /// Runs on `executor`: blocking reads, bounded by the poll interval so `stop()` is noticed.
    private func readBatch(maxRecords: Int) throws -> [Record]? {
        try state.withLock { state throws -> [Record]? in
            guard !state.finished, state.reader != nil else { return nil }
            var records: [Record] = []
            records.reserveCapacity(maxRecords)
            while records.count < maxRecords {
                if stopped.load(ordering: .relaxed) {
                    state.finished = true
                    break
                }
                // Once some records are in hand, hand them over instead of waiting long for more.
                let result = try state.reader!.next(pollMilliseconds: records.isEmpty ? 250 : 5)
                switch result {
                case .idle:
                    if !records.isEmpty { return records }
                case .endOfInput:
                    state.finished = true
                    return records.isEmpty ? nil : records
                case .item(.line(let bytes, let number, let endOffset)):
                    if options.skipBlankLines, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                    records.append(Record(
                        raw: bytes,
                        position: SourcePosition(stream: stream, offset: number, resumeByteOffset: endOffset)))
                case .item(.tooLarge(let prefix, let length, let number, let endOffset)):
                    var record = Record(
                        raw: prefix, position: SourcePosition(stream: stream, offset: number, resumeByteOffset: endOffset))
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
            return records.isEmpty && state.finished ? nil : records
        }
    }

    public func commit(_ positions: [SourcePosition]) async throws {
        guard let checkpointPath = options.checkpointPath,
            let last = positions.max(by: { $0.offset < $1.offset }), let byteOffset = last.resumeByteOffset
        else { return }
        try Checkpoint(stream: stream, line: last.offset, byteOffset: byteOffset).save(to: checkpointPath)
    }

    public func stop() async {
        stopped.store(true, ordering: .relaxed)
    }

    public func close() async throws {
        state.withLock { state in
            if state.ownsDescriptor, let fd = state.reader?.fd { Foundation.close(fd) }
            state.reader = nil
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
    public init(_ description: String) { self.description = description }
}

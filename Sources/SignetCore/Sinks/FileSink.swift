import Foundation
import Synchronization

/// Appends each message's value as one line to a file, creating it (and its folder).
///
/// With `fsync` (the default) a batch is acknowledged only once it is on disk, so a
/// power cut after the source commit cannot lose it.
public final class FileSink: ReopenableSink {
    /// A size cap: rotate by itself instead of (or besides) logrotate.
    public struct Rotation: Sendable, Hashable {
        /// A batch that would take the file past this size goes to a new file; the full one
        /// becomes `PATH.1` (an older `.1` becomes `.2`, ...). One batch larger than the cap
        /// still goes whole into one file: batches are never split.
        public var maxBytes: Int64
        /// Rotated files kept (`PATH.1` ... `PATH.keep`); the oldest beyond is deleted.
        public var keep: Int

        /// Rotate past `maxBytes`, keeping `keep` old files.
        public init(maxBytes: Int64, keep: Int) {
            self.maxBytes = maxBytes
            self.keep = keep
        }
    }

    /// The file written.
    public let path: String
    /// Whether each write is fsynced before it is acknowledged.
    public let fsync: Bool
    /// When the file is rotated; nil: never.
    public let rotation: Rotation?
    /// The open file and its size (what rotation compares with the cap).
    private let file = Mutex<(descriptor: Int32, size: Int64)>((-1, 0))
    /// `write(2)` and `fsync` block: off the cooperative pool, one batch at a time.
    private let executor: BlockingExecutor

    /// What the `file` sink's keys set besides its path (`ComponentSpec/fileSink`).
    public struct Options: Sendable, Hashable {
        /// fsync after every batch before acknowledging it.
        public var fsync = true
        /// Rotate by size past this many bytes; 0: never.
        public var maxBytes = 0
        /// Rotated files kept with ``maxBytes``.
        public var keep = 5

        /// fsync on, no rotation.
        public init() {}

        /// The rotation these options ask for, nil without a size cap.
        public var rotation: Rotation? { maxBytes > 0 ? Rotation(maxBytes: Int64(maxBytes), keep: keep) : nil }
    }

    /// A sink appending to `path` as `options` say.
    public convenience init(path: String, options: Options) {
        self.init(path: path, fsync: options.fsync, rotation: options.rotation)
    }

    /// A sink appending to `path` (created if missing), one message a line.
    public init(path: String, fsync: Bool = true, rotation: Rotation? = nil) {
        self.path = path
        self.fsync = fsync
        self.rotation = rotation
        executor = BlockingExecutor(label: "signet.sink.file")
    }

    /// Opens (creates) the file for appending.
    public func open() async throws {
        try await executor.run { [self] in try openBlocking() }
    }

    private func openBlocking() throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw SinkError("cannot create the folder '\(directory)' for '\(path)'")
            }
        }
        let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SinkError("cannot open '\(path)' for appending: \(String(cString: strerror(errno)))") }
        do {
            try Self.cutTornLastLine(fd, path: path)
        } catch {
            Foundation.close(fd)
            throw error
        }
        var status = stat()
        let size = fstat(fd, &status) == 0 ? Int64(status.st_size) : 0
        // A reopen (log rotation) swaps in the new file; the old one is closed after the swap.
        let previous = file.withLock { current in
            defer { current = (fd, size) }
            return current.descriptor
        }
        if previous >= 0 { Foundation.close(previous) }
    }

    /// Moves the full file to `PATH.1` (shifting older ones up, dropping the one past `keep`)
    /// and opens a new `PATH`. The full file is on disk first (`fsync` already ran after its
    /// last batch when enabled), so a crash in between leaves every acknowledged line in
    /// `PATH` or `PATH.1`.
    private func rotate(keeping keep: Int) throws {
        let manager = FileManager.default
        try? manager.removeItem(atPath: "\(path).\(keep)")
        for index in stride(from: keep - 1, through: 1, by: -1) where manager.fileExists(atPath: "\(path).\(index)") {
            guard rename("\(path).\(index)", "\(path).\(index + 1)") == 0 else { throw SinkError(writing: "\(path).\(index + 1)", errno: errno) }
        }
        guard rename(path, "\(path).1") == 0 else { throw SinkError(writing: "\(path).1", errno: errno) }
        try openBlocking()
    }

    /// Opens `path` anew (after logrotate moved the file away) and writes there from the
    /// next batch on. Runs on the sink's executor, so it falls between two writes: no batch
    /// is split across the files, and none is lost.
    public func reopen() async throws {
        try await executor.run { [self] in
            guard file.withLock({ $0.descriptor >= 0 }) else { return }
            try openBlocking()
        }
    }

    /// A process killed in the middle of a write (kill -9, OOM) can leave the start of a line
    /// without its end. That line's batch was never acknowledged, so its source position was
    /// never committed: after the restart the same record is written again, whole. The
    /// fragment is cut off so the file stays one complete line per message instead of one
    /// line that no reader can parse.
    ///
    /// Only regular files (a FIFO or a device has no end to cut); read through a second,
    /// read-only descriptor, and a file we may only write is left as it is.
    static func cutTornLastLine(_ fd: Int32, path: String) throws(SinkError) {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size > 0 else { return }
        let reader = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { return }
        defer { Foundation.close(reader) }
        var end = status.st_size
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // `end` moves back to just past the last newline (0 when there is none).
        while end > 0 {
            let start = max(0, end - off_t(chunk.count))
            let count = Int(end - start)
            let read = chunk.withUnsafeMutableBytes { pread(reader, $0.baseAddress, count, start) }
            guard read == count else { throw SinkError("cannot read the end of '\(path)': \(String(cString: strerror(errno)))") }
            if let newline = chunk[0..<count].lastIndex(of: UInt8(ascii: "\n")) {
                end = start + off_t(newline) + 1
                break
            }
            end = start
        }
        // Ends with a newline: nothing was torn.
        guard end != status.st_size else { return }
        guard ftruncate(fd, end) == 0 else { throw SinkError(writing: path, errno: errno) }
    }

    public func write(_ messages: [OutputMessage]) async throws {
        try await executor.runInPlace { [self] in try writeBlocking(messages) }
    }

    private func writeBlocking(_ messages: [OutputMessage]) throws {
        let bytes = messages.reduce(Int64(0)) { $0 + Int64($1.value.count) + 1 }
        if let rotation, file.withLock({ $0.descriptor >= 0 && $0.size > 0 && $0.size + bytes > rotation.maxBytes }) {
            try rotate(keeping: rotation.keep)
        }
        try file.withLock { file in
            guard file.descriptor >= 0 else { throw SinkError("file sink '\(path)' is not open") }
            try LineWriter.write(messages, to: file.descriptor, destination: path)
            file.size += bytes
            if fsync, Foundation.fsync(file.descriptor) != 0 {
                throw SinkError(writing: path, errno: errno)
            }
        }
    }

    /// Flushes and closes the file.
    public func close() async throws {
        file.withLock { file in
            if file.descriptor >= 0 { Foundation.close(file.descriptor) }
            file = (-1, 0)
        }
    }
}

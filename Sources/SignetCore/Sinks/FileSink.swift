import Foundation
import Synchronization

/// Appends each message's value as one line to a file, creating it (and its folder).
///
/// With `fsync` (the default) a batch is acknowledged only once it is on disk, so a
/// power cut after the source commit cannot lose it.
public final class FileSink: ReopenableSink {
    public let path: String
    public let fsync: Bool
    private let descriptor = Mutex<Int32>(-1)
    /// `write(2)` and `fsync` block: off the cooperative pool, one batch at a time.
    private let executor: BlockingExecutor

    public init(path: String, fsync: Bool = true) {
        self.path = path
        self.fsync = fsync
        executor = BlockingExecutor(label: "signet.sink.file")
    }

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
        // A reopen (log rotation) swaps in the new file; the old one is closed after the swap.
        let previous = descriptor.withLock { current in
            defer { current = fd }
            return current
        }
        if previous >= 0 { Foundation.close(previous) }
    }

    /// Opens `path` anew (after logrotate moved the file away) and writes there from the
    /// next batch on. Runs on the sink's executor, so it falls between two writes: no batch
    /// is split across the files, and none is lost.
    public func reopen() async throws {
        try await executor.run { [self] in
            guard descriptor.withLock({ $0 >= 0 }) else { return }
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
        try await executor.run { [self] in try writeBlocking(messages) }
    }

    private func writeBlocking(_ messages: [OutputMessage]) throws {
        try descriptor.withLock { fd in
            guard fd >= 0 else { throw SinkError("file sink '\(path)' is not open") }
            try LineWriter.write(messages, to: fd, destination: path)
            if fsync, Foundation.fsync(fd) != 0 {
                throw SinkError(writing: path, errno: errno)
            }
        }
    }

    public func close() async throws {
        descriptor.withLock { fd in
            if fd >= 0 { Foundation.close(fd) }
            fd = -1
        }
    }
}

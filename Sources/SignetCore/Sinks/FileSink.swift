import Foundation
import Synchronization

/// Appends each message's value as one line to a file, creating it (and its folder).
///
/// With `fsync` (the default) a batch is acknowledged only once it is on disk, so a
/// power cut after the source commit cannot lose it.
public final class FileSink: Sink {
    public let path: String
    public let fsync: Bool
    private let descriptor = Mutex<Int32>(-1)

    public init(path: String, fsync: Bool = true) {
        self.path = path
        self.fsync = fsync
    }

    public func open() async throws {
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
        descriptor.withLock { $0 = fd }
    }

    public func write(_ messages: [OutputMessage]) async throws {
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

package import Foundation

/// Replaces a small file so that a crash at any point, power loss included, leaves the old or
/// the new content: a temporary file beside it, fsync, rename over, fsync of the folder. The
/// one way Signet writes a checkpoint (the file sources', `signet backfill`'s and `signet
/// reconcile`'s). Blocking: call it on a ``BlockingExecutor``.
package enum AtomicFile {
    /// - Parameter what: names the file in errors ("the backfill checkpoint").
    /// - Throws: ``SourceError`` naming the step, the file and the system's reason.
    package static func write(_ data: Data, to path: String, what: String) throws {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot create", what, temporary) }
        var written = 0
        let ok = data.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let result = Foundation.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += result
            }
            return fsync(fd) == 0
        }
        let error = failure("cannot write", what, temporary)
        close(fd)
        guard ok else {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else { throw failure("cannot rename over", what, path) }
        // The rename itself is durable only once the folder is.
        let folder = (path as NSString).deletingLastPathComponent
        let directory = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private static func failure(_ action: String, _ what: String, _ path: String) -> SourceError {
        SourceError("\(action) \(what) '\(path)': \(String(cString: strerror(errno)))")
    }
}

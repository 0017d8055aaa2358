import Foundation

/// One writing process per SQLite state database: an `flock` on `<database>.lock`, held
/// from the store's open to its close.
///
/// Two writers on one database re-send each other's undelivered outbox events, so the
/// store refuses a second writer, whoever opens it: `signet run`, an embedding service, or
/// a second store of the same process on the same file (`flock` locks belong to an open
/// file description, so they conflict inside one process too). The key is the resolved
/// database path: a relative path, a symlinked folder or a symlink to the file all lock the
/// same file. The kernel drops the lock when the process dies, even by SIGKILL, so a crash
/// leaves no stale lock. Readers (`readOnly`) take none.
final class SQLiteWriterLock: Sendable {
    /// The lock file of `database`: the resolved database path plus this suffix.
    static let suffix = ".lock"

    private let descriptor: Int32
    /// The lock file.
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        // Unlock before closing: a process forked at this moment (any child being spawned, until
        // its exec closes the descriptor) holds a copy of it, and the lock belongs to the open
        // file description, so close alone would keep the database locked until that exec and
        // a store reopened right away would find it "in use" by this very process.
        flock(descriptor, LOCK_UN)
        Foundation.close(descriptor)
    }

    /// Locks `database` (whose folder exists), writing this process's id into the lock file.
    static func acquire(database: String) throws(StateStoreError) -> SQLiteWriterLock {
        let path = resolved(database) + suffix
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StateStoreError("cannot open the lock file '\(path)': \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = readHolder(fd)
            Foundation.close(fd)
            throw StateStoreError(
                "the state database '\(database)' is in use by pid \(holder ?? "unknown") "
                    + "(another `signet run` writes it; one writer per database)", inUse: true)
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        return SQLiteWriterLock(descriptor: fd, path: path)
    }

    /// The database's real path: the file's when it exists, else its folder's plus its name.
    static func resolved(_ database: String) -> String {
        if let real = realPath(database) { return real }
        let url = URL(fileURLWithPath: database)
        let folder = url.deletingLastPathComponent().path
        return (realPath(folder) ?? folder) + "/" + url.lastPathComponent
    }

    private static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    private static func readHolder(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text) == nil ? nil : text
    }
}

import Foundation

/// An exclusive hold on a data directory for one writing process.
///
/// Two writers on one data dir re-send each other's undelivered outbox events, so `signet run`
/// takes an `flock` on `<dir>/signet.lock` before the pipeline starts and keeps it until the
/// process exits (the kernel drops it even after SIGKILL, so a crash leaves no stale lock).
/// Readers (`signet entitlements`, `signet state show`) take no lock. Group members that share
/// state need a store built for that, not one shared file.
final class DataDirectoryLock {
    /// The lock file's name inside the data directory.
    static let fileName = "signet.lock"

    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Checks `path` (a writable directory, created when only the last component is missing)
    /// and locks it; every failure is one usage line (exit 2) before anything runs.
    static func acquire(_ path: String, variable: String = "SIGNET_DATA_DIR") throws(ConfigurationFailure) -> DataDirectoryLock {
        let name = "\(variable) '\(path)'"
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw failure("\(name) is a file, not a directory") }
        } else {
            let parent = (path as NSString).deletingLastPathComponent
            guard parent.isEmpty || FileManager.default.fileExists(atPath: parent) else {
                throw failure("\(name) does not exist, nor does its parent folder '\(parent)'")
            }
            guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
                throw failure("cannot create \(name): \(String(cString: strerror(errno)))")
            }
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw failure("\(name) is not writable (\(String(cString: strerror(errno)))); readers such as `signet entitlements` need no write access")
        }
        let lockPath = (path as NSString).appendingPathComponent(fileName)
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot open '\(lockPath)': \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = readHolder(fd)
            close(fd)
            throw failure("\(name) is in use by pid \(holder ?? "unknown") (another `signet run` writes it; one writer per data dir)")
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        return DataDirectoryLock(descriptor: fd)
    }

    private static func readHolder(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text) == nil ? nil : text
    }

    private static func failure(_ message: String) -> ConfigurationFailure {
        ConfigurationFailure(description: "signet: \(message)")
    }
}

import Foundation

/// Checks `$SIGNET_DATA_DIR` before a pipeline that keeps data there opens anything, so a
/// wrong value is one usage line (exit 2) instead of a failure halfway through opening.
///
/// Only a check: one writer per database is the SQLite store's own lock (taken when the
/// store opens, whoever opens it; `SQLiteWriterLock`), not the command's.
enum DataDirectoryCheck {
    /// Checks `path` (a writable directory, created when only the last component is missing).
    static func check(_ path: String, variable: String = "SIGNET_DATA_DIR") throws(ConfigurationFailure) {
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
    }

    private static func failure(_ message: String) -> ConfigurationFailure {
        ConfigurationFailure(description: "signet: \(message)")
    }
}

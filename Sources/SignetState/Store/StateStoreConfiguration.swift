import Foundation

/// Which store a ``StateStoreResource`` opens: what a `stores:` entry of type `sqlite`
/// or `memory` says.
public enum StateStoreConfiguration: Sendable, Hashable {
    /// A SQLite database file, opened with `options`.
    case sqlite(path: String, options: SQLiteStateStore.Options)
    /// A store in this process's memory, gone when the run ends (tests, `signet test`).
    case memory(InMemoryStateStore.Options)

    /// The default database file, relative to the working directory.
    public static let defaultDatabasePath = "signet-data/signet.sqlite"

    /// The database it opens (`sqlite:/absolute/path`), nil for memory: two stores of
    /// one pipeline with the same identity are a configuration error.
    public var identity: String? {
        switch self {
        case .sqlite(let path, _):
            let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            return "sqlite:" + url.standardizedFileURL.path
        case .memory:
            return nil
        }
    }

    /// Opens the store it describes.
    package func open() throws -> any StoreRoles {
        switch self {
        case .sqlite(let path, let options):
            try SQLiteStateStore(path: path, options: options)
        case .memory(let options):
            InMemoryStateStore(options: options)
        }
    }
}

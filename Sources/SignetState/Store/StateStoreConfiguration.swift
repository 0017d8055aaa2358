import Foundation
import SignetCore

/// Which store a stage uses, as written in YAML; stages naming the same store share one
/// opened instance through ``StateStoreRegistry``.
///
/// ```yaml
/// store: sqlite            # or memory
/// database: signet-data/signet.sqlite
/// durability: full         # full | normal | off
/// busy_timeout: 5s
/// cache_size: 100000
/// outbox_retention: 0s
/// ```
public enum StateStoreConfiguration: Sendable, Hashable {
    case sqlite(path: String, options: SQLiteStateStore.Options)
    /// A process-wide in-memory store named `name` (stages with the same name share it).
    case memory(name: String, maxKeys: Int, outboxRetention: Duration)

    /// The default database file, relative to the working directory.
    public static let defaultDatabasePath = "signet-data/signet.sqlite"

    /// The identity stages share a store by.
    var identity: String {
        switch self {
        case .sqlite(let path, _):
            let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            return "sqlite:" + url.standardizedFileURL.path
        case .memory(let name, _, _):
            return "memory:" + name
        }
    }

    /// Reads the store keys of a stage's settings.
    public static func parse(_ config: ConfigObject) throws(ConfigError) -> StateStoreConfiguration {
        let kind = try config.choice("store", ["sqlite", "memory"], default: "sqlite")
        let outboxRetention = try config.duration("outbox_retention", default: .zero)
        switch kind {
        case "memory":
            if config.contains("database") {
                throw config.error("'database' applies to store: sqlite; a memory store is named with 'name'", key: "database")
            }
            let name = try config.string("name", default: "default")
            let maxKeys = try config.int("max_keys", default: 1_000_000, in: 1...1_000_000_000)
            return .memory(name: name, maxKeys: maxKeys, outboxRetention: outboxRetention)
        default:
            var options = SQLiteStateStore.Options()
            let path = try config.string("database", default: defaultDatabasePath)
            let durabilities = SQLiteStateStore.Durability.allCases.map(\.rawValue)
            options.durability = SQLiteStateStore.Durability(
                rawValue: try config.choice("durability", durabilities, default: "full")) ?? .full
            options.busyTimeout = try config.duration("busy_timeout", default: .seconds(5))
            options.cacheCapacity = try config.int("cache_size", default: options.cacheCapacity, in: 0...100_000_000)
            options.outboxRetention = outboxRetention
            return .sqlite(path: path, options: options)
        }
    }
}

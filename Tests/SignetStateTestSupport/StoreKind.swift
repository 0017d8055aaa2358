import Foundation
package import SignetPostgres
package import SignetState
import SignetTestSupport

/// The state stores every contract test runs against: in-memory, SQLite and a real
/// PostgreSQL (started by ``PostgresServer``; left out only when its binaries are missing).
package enum StoreKind: String, CaseIterable, Sendable {
    case memory, sqlite, postgres

    /// The stores that can run here (postgres needs the server binaries).
    package static var available: [StoreKind] {
        allCases.filter { $0 != .postgres || PostgresServer.unavailableReason == nil }
    }

    /// The durable stores (a restart keeps their contents).
    package static var durable: [StoreKind] { available.filter { $0 != .memory } }

    /// A fresh store of each available kind.
    package static func freshStores() async throws -> [any StoreRoles] {
        var stores: [any StoreRoles] = []
        for kind in available { stores.append(try await kind.makeLocation().open()) }
        return stores
    }

    /// Where one test's store lives: a new SQLite file or PostgreSQL database.
    /// PostgreSQL's `CREATE DATABASE` runs off the cooperative pool (``offPool(_:)``).
    package func makeLocation(outboxRetention: Duration = .zero) async throws -> StoreLocation {
        switch self {
        case .memory: return .memory(InMemoryStateStore(outboxRetention: outboxRetention))
        case .sqlite:
            var options = SQLiteStateStore.Options()
            options.outboxRetention = outboxRetention
            return .sqlite(Fixture.temporaryDatabase(), options)
        case .postgres:
            let url = try await offPool { try PostgresServer.shared.get().makeDatabase() }
            var options = PostgresStoreOptions(url: try PostgresURL(url))
            options.outboxRetention = outboxRetention
            options.lease = .seconds(2)
            options.outageTimeout = .seconds(60)
            return .postgres(options)
        }
    }
}


/// One test's database, which can be opened again (a restart) or by a second instance.
package enum StoreLocation {
    case memory(InMemoryStateStore)
    case sqlite(String, SQLiteStateStore.Options)
    case postgres(PostgresStoreOptions)

    /// Opening a PostgreSQL store (connect, migrate, lease) runs off the cooperative pool.
    package func open() async throws -> any StoreRoles {
        switch self {
        case .memory(let store): return store
        case .sqlite(let path, let options): return try SQLiteStateStore(path: path, options: options)
        case .postgres(let options): return try await offPool { try PostgresStateStore(options: options) }
        }
    }
}

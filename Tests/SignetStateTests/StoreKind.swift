import Foundation
import SignetPostgres
import SignetState
import SignetTestSupport

/// The state stores every contract test runs against: in-memory, SQLite and a real
/// PostgreSQL (started by ``PostgresServer``; left out only when its binaries are missing).
enum StoreKind: String, CaseIterable, Sendable {
    case memory, sqlite, postgres

    /// The stores that can run here (postgres needs the server binaries).
    static var available: [StoreKind] {
        allCases.filter { $0 != .postgres || PostgresServer.unavailableReason == nil }
    }

    /// The durable stores (a restart keeps their contents).
    static var durable: [StoreKind] { available.filter { $0 != .memory } }

    /// A fresh store of each available kind.
    static func freshStores() throws -> [any StateStore] {
        try available.map { try $0.makeLocation().open() }
    }

    /// Where one test's store lives: a new SQLite file or PostgreSQL database.
    func makeLocation(outboxRetention: Duration = .zero) throws -> StoreLocation {
        switch self {
        case .memory: return .memory(InMemoryStateStore(outboxRetention: outboxRetention))
        case .sqlite:
            var options = SQLiteStateStore.Options()
            options.outboxRetention = outboxRetention
            return .sqlite(Fixture.temporaryDatabase(), options)
        case .postgres:
            var options = PostgresStoreOptions(url: try PostgresURL(try PostgresServer.shared.get().makeDatabase()))
            options.outboxRetention = outboxRetention
            options.lease = .seconds(2)
            options.outageTimeout = .seconds(60)
            return .postgres(options)
        }
    }
}


/// One test's database, which can be opened again (a restart) or by a second instance.
enum StoreLocation {
    case memory(InMemoryStateStore)
    case sqlite(String, SQLiteStateStore.Options)
    case postgres(PostgresStoreOptions)

    func open() throws -> any StateStore {
        switch self {
        case .memory(let store): return store
        case .sqlite(let path, let options): return try SQLiteStateStore(path: path, options: options)
        case .postgres(let options): return try PostgresStateStore(options: options)
        }
    }
}

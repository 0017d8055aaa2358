package import SignetState
import SignetTestSupport
import Testing

/// A store the behaviour tests run against. Every parameterised test takes each of
/// ``all``: memory, SQLite and a real PostgreSQL (a fresh database per store on the
/// test process's one server, ``PostgresServer/shared``; left out only when the
/// PostgreSQL binaries are not installed, which SignetPostgresTests reports).
package struct StoreFactory: Sendable, CustomTestStringConvertible {
    package let name: String
    package let make: @Sendable () async throws -> any StoreRoles
    package var testDescription: String { name }

    package static let memory = StoreFactory(name: "memory") { InMemoryStateStore() }
    package static let sqlite = StoreFactory(name: "sqlite") { try SQLiteStateStore(path: Fixture.temporaryDatabase()) }
    package static let postgres = StoreFactory(name: "postgres") { try await StoreKind.postgres.makeLocation().open() }
    package static let all = [memory, sqlite] + (PostgresServer.unavailableReason == nil ? [postgres] : [])
}

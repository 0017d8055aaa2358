public import SignetState
import SignetTestSupport
public import Testing

/// A store the behaviour tests run against. Every parameterised test takes each of
/// ``all``: memory, SQLite and a real PostgreSQL (a fresh database per store on the
/// test process's one server, ``PostgresServer/shared``; left out only when the
/// PostgreSQL binaries are not installed, which SignetPostgresTests reports).
public struct StoreFactory: Sendable, CustomTestStringConvertible {
    public let name: String
    public let make: @Sendable () async throws -> any StateStore
    public var testDescription: String { name }

    public static let memory = StoreFactory(name: "memory") { InMemoryStateStore() }
    public static let sqlite = StoreFactory(name: "sqlite") { try SQLiteStateStore(path: Fixture.temporaryDatabase()) }
    public static let postgres = StoreFactory(name: "postgres") { try await StoreKind.postgres.makeLocation().open() }
    public static let all = [memory, sqlite] + (PostgresServer.unavailableReason == nil ? [postgres] : [])
}

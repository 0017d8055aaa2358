import SignetCore
import SignetPostgres
import SignetTestSupport
import Testing

/// `postgres` and `auto` stores declare each key that sets an option once, bound to ``PostgresStoreOptions``.
@Suite("postgres store bindings")
struct PostgresBindingTests {
    @Test func everyDefaultIsTheOptionsValue() throws {
        #expect(
            try boundDefaultMismatches(PostgresStoreOptions.configuration, in: .postgresStore, mapping: "url: postgres://signet@127.0.0.1/signet")
                == [])
        #expect(try boundDefaultMismatches(PostgresStoreOptions.configuration, in: .autoStore) == [])
        #expect(
            ComponentSpec.postgresStore.fields.map(\.name)
                == ["url", "pool_size", "statement_timeout", "lease", "outage_timeout", "outbox_retention", "entitlements"])
    }

    @Test func writtenKeysSetTheirOptions() throws {
        let options = try PostgresStoreOptions(
            ComponentSpec.postgresStore.parse(ConfigNode.parse(
                yaml: "url: postgres://signet@127.0.0.1/signet\npool_size: 3\nlease: 1m", file: "s.yaml", environment: [:])))
        #expect(options.poolSize == 3 && options.lease == .seconds(60) && options.statementTimeout == .seconds(30))
    }
}

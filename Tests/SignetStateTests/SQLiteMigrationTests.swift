@testable import SignetState
import SignetStateTestSupport
import Testing

/// Databases written before the expiry sweep existed get its columns on open, and the
/// purchases they hold are found by the sweep (next_boundary back-filled).
@Suite struct SQLiteMigrationTests {
    @Test func olderDatabasesGetTheSweepColumnsAndABackfill() async throws {
        let path = Fixture.temporaryDatabase()
        do {
            let store = try SQLiteStateStore(path: path)
            _ = try await StateHarness(store: store).runEach([Table.subscribed, Table.consumable])
            try store.close()
        }
        // Make the file look like one from before: no sweep columns, no index.
        let database = try SQLiteDatabase(path: path)
        try database.execute("""
            DROP INDEX subscriptions_next_boundary;
            ALTER TABLE subscriptions DROP COLUMN next_boundary;
            ALTER TABLE subscriptions DROP COLUMN renewal_date;
            ALTER TABLE subscriptions DROP COLUMN expires_date_source;
            """)
        #expect(try !database.columnExists(table: "subscriptions", column: "next_boundary"))
        database.close()

        let store = try SQLiteStateStore(path: path)
        defer { try? store.close() }
        let end = Fixture.t0 + 30 * Fixture.day
        let notYet = try store.withTransaction { try $0.subscriptionsDue(atOrBefore: end - 1, limit: 10) }
        #expect(notYet.isEmpty)
        let due = try store.withTransaction { try $0.subscriptionsDue(atOrBefore: end, limit: 10) }
        #expect(due.map(\.originalTransactionId) == ["1000"], "the consumable has no end")
        let harness = StateHarness(store: store)
        #expect(try await harness.sweep(at: end + Fixture.day).map(\.type) == ["expired"])
    }
}

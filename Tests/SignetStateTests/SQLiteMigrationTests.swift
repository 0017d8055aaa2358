import AppStoreModels
import Foundation
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

    @Test("a database from before retention answers: a reader reports none, a writer adds the table and keeps them")
    func olderDatabasesGetTheRetentionTable() async throws {
        let path = Fixture.temporaryDatabase()
        try SQLiteStateStore(path: path).close()
        let database = try SQLiteDatabase(path: path)
        try database.execute("DROP TABLE retention_offers")
        database.close()

        var options = SQLiteStateStore.Options()
        options.readOnly = true
        let reader = try SQLiteStateStore(path: path, options: options)
        #expect(try reader.retentionOffers(answeredSince: 0, limit: 10).isEmpty)
        #expect(try reader.retentionOffer(requestIdentifier: "r") == nil)
        #expect(try reader.retentionOffers(originalTransactionId: "o", answeredSince: 0).isEmpty)
        try reader.close()

        let writer = try SQLiteStateStore(path: path)
        defer { try? writer.close() }
        let record = RetentionOfferRecord(
            requestIdentifier: "r", originalTransactionId: "o", environment: "Sandbox", productId: "p", result: "default",
            reason: "no_rule", kind: "message", answeredAt: 1, response: "{}")
        #expect(try writer.recordRetentionOffer(record) == record)
        #expect(try writer.retentionOffers(answeredSince: 0, limit: 10) == [record])
    }

    /// Ledger rows as an earlier Signet wrote them: keyed by the token as the backend spelled it.
    static func legacyConsent(_ spelled: String, consented: Bool, at: Int64) throws -> String {
        let canonical = try #require(AppAccountToken(spelled))
        let record = try ConsumptionRecordCoding.encode(ConsumptionConsent(.appAccountToken(canonical), consented: consented, at: at, by: "old"))
            .replacingOccurrences(of: canonical.description, with: spelled)
        return "INSERT INTO consumption_ledger (key, record) VALUES ('appAccountToken:\(spelled)', '\(record)');"
    }

    /// A refund question as an earlier Signet stored it, its token as Apple's payload spelled it.
    static func legacyRequest(_ id: String, token: String) throws -> String {
        let placeholder = try #require(AppAccountToken("00000000-0000-4000-8000-000000000000"))
        let record = try ConsumptionRecordCoding.encode(
            ConsumptionRequestRecord(transactionId: id, appAccountToken: placeholder, requestedAt: 100, receivedAt: 100))
            .replacingOccurrences(of: placeholder.description, with: token)
        return "INSERT INTO consumption_requests (transaction_id, requested_at, due_at, record) VALUES ('\(id)', 100, NULL, '\(record)');"
    }

    @Test("appAccountTokens stored in other spellings (issue 53) become canonical on open; two spellings of one customer's consent merge into the deciding entry")
    func appAccountTokensBecomeCanonical() async throws {
        let path = Fixture.temporaryDatabase()
        let token = "5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01"  // Table.subscribed's, as Apple signs it
        do {
            let store = try SQLiteStateStore(path: path)
            _ = try await StateHarness(store: store).runEach([Table.subscribed])
            try store.close()
        }
        let database = try SQLiteDatabase(path: path)
        // The breach: granted in lower case, withdrawn later in upper case (Swift's uuidString).
        // Then the reverse order, and a tie at one instant (a withdrawal wins).
        let (breach, regranted, tie) = ("aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b", "cccccccc-0000-4000-8000-00000000000c")
        try database.execute("""
            UPDATE subscriptions SET app_account_token = upper(app_account_token);
            DELETE FROM signet_meta WHERE name = 'app_account_tokens_canonical';
            \(try Self.legacyConsent(breach, consented: true, at: 100))
            \(try Self.legacyConsent(breach.uppercased(), consented: false, at: 200))
            \(try Self.legacyConsent(regranted.uppercased(), consented: false, at: 100))
            \(try Self.legacyConsent("Bbbbbbbb-0000-4000-8000-00000000000B", consented: true, at: 300))
            \(try Self.legacyConsent(tie.uppercased(), consented: true, at: 400))
            \(try Self.legacyConsent("cCcccccc-0000-4000-8000-00000000000c", consented: false, at: 400))
            \(try Self.legacyConsent("dddddddd-0000-4000-8000-00000000000D", consented: true, at: 10))
            \(try Self.legacyRequest("q-upper", token: "EEEEEEEE-0000-4000-8000-00000000000E"))
            \(try Self.legacyRequest("q-empty", token: ""))
            """)
        database.close()

        let store = try SQLiteStateStore(path: path)
        defer { try? store.close() }
        for spelling in [token, token.uppercased()] {
            let found = try store.subscriptions(appAccountToken: try #require(AppAccountToken(spelling)))
            #expect(found.map(\.originalTransactionId) == ["1000"])
            #expect(found.first?.appAccountToken?.description == token)
        }
        func consent(_ text: String) throws -> ConsumptionConsent? { try store.consumptionConsent(.appAccountToken(try #require(AppAccountToken(text)))) }
        #expect(try consent(breach)?.consented == false, "the later withdrawal stands")
        #expect(try consent(regranted).map { ($0.consented, $0.at) } ?? (false, 0) == (true, 300))
        #expect(try consent(tie).map { ($0.consented, $0.at) } ?? (true, 0) == (false, 400))
        #expect(try consent("DDDDDDDD-0000-4000-8000-00000000000d")?.appAccountToken?.description == "dddddddd-0000-4000-8000-00000000000d")
        // Refund questions stored in another spelling read back canonical; one whose token was no
        // UUID (an empty string) reads back without it instead of failing the whole listing.
        let requests = try store.consumptionRequests(requestedSince: 0, limit: 10)
        #expect(requests.map(\.transactionId).sorted() == ["q-empty", "q-upper"])
        #expect(requests.first { $0.transactionId == "q-upper" }?.appAccountToken?.description == "eeeeeeee-0000-4000-8000-00000000000e")
        #expect(requests.first { $0.transactionId == "q-empty" }.map { $0.appAccountToken == nil } == true)
        let check = try SQLiteDatabase(path: path, readOnly: true)
        defer { check.close() }
        let statement = try check.statement(SQLiteQuery("SELECT count(*) FROM consumption_ledger WHERE substr(key, 1, 16) = 'appAccountToken:' AND substr(key, 17) <> lower(substr(key, 17))"))
        defer { statement.reset() }
        #expect(try statement.step() && statement.int64(0) == 0, "no key in another spelling is left")
    }
}

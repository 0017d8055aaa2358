import Foundation
import SignetTestSupport
import Testing

/// The README's PostgreSQL path through the CLI: SIGNET_DATABASE_URL switches the embedded
/// default pipeline, `signet entitlements` / `state show` and `signet migrate` to PostgreSQL
/// (a real server, ``PostgresServer``), the answers equal an SQLite run's, and the password
/// in the URL never reaches the output, even at debug log level.
@Suite(
    "PostgreSQL through the CLI", .tags(.endToEnd), .timeLimit(.minutes(10)),
    .enabled(if: PostgresServer.unavailableReason == nil, "PostgreSQL binaries missing"))
struct PostgresCLIEndToEndTests {
    /// The test server trusts loopback, so any password connects; it must still never be printed.
    static let password = "pw-never-logged-7f3a"

    static func databaseURL() throws -> String {
        try PostgresServer.shared.get().makeDatabase("cli")
            .replacingOccurrences(of: "postgres://postgres@", with: "postgres://postgres:\(password)@")
    }

    @Test("SIGNET_DATABASE_URL: run, replay, entitlements and state show as with SQLite; the password is never printed", .ownThread)
    func runAndReadThroughPostgres() throws {
        let corpus = try StateCorpus.get()
        let url = try Self.databaseURL()
        let input = Data(((corpus.notificationLines + corpus.customers.flatMap(\.lines)).joined(separator: "\n") + "\n").utf8)
        let sqliteDir = corpus.directory.appendingPathComponent("runs/pg-reference-\(UUID().uuidString.prefix(8))")
        let postgresDir = corpus.directory.appendingPathComponent("runs/pg-\(UUID().uuidString.prefix(8))")
        defer {
            try? FileManager.default.removeItem(at: sqliteDir)
            try? FileManager.default.removeItem(at: postgresDir)
        }
        let onPostgres = ["SIGNET_DATA_DIR": postgresDir.path, "SIGNET_DATABASE_URL": url]
        for folder in [sqliteDir, postgresDir] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }

        let reference = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: ["SIGNET_DATA_DIR": sqliteDir.path])
        try #require(reference.exitCode == 0, "\(reference.stderr)")
        let first = try StateE2E.signet(["run", "--log-level", "debug"], stdin: input, corpus: corpus, extra: onPostgres)
        try #require(first.exitCode == 0, "\(first.stderr)")
        #expect(first.lines.count == reference.lines.count, "PostgreSQL emitted \(first.lines.count) events, SQLite \(reference.lines.count)")
        #expect(!FileManager.default.fileExists(atPath: postgresDir.appendingPathComponent("signet.sqlite").path),
                "the SQLite file was written although SIGNET_DATABASE_URL was set")
        let replay = try StateE2E.signet(["run"], stdin: input, corpus: corpus, extra: onPostgres)
        #expect(replay.exitCode == 0 && replay.stdout.isEmpty, "the replay emitted: \(replay.stdoutText.prefix(300))")

        // Same answers as the SQLite run, evaluated at one fixed instant.
        let at = String(Int64(Date().timeIntervalSince1970 * 1000))
        for customer in corpus.customers {
            let query = ["entitlements", "--app-account-token", customer.appAccountToken, "--at", at]
            let want = try StateE2E.signet(query, corpus: corpus, extra: ["SIGNET_DATA_DIR": sqliteDir.path])
            let got = try StateE2E.signet(query, corpus: corpus, extra: onPostgres)
            #expect(got.exitCode == 0 && got.stdout == want.stdout, "\(customer.name): \(got.stdoutText) vs \(want.stdoutText) \(got.stderr)")
            let show = ["state", "show", "--original-transaction-id", customer.originalTransactionId]
            let shown = try StateE2E.signet(show, corpus: corpus, extra: onPostgres)
            let shownSQLite = try StateE2E.signet(show, corpus: corpus, extra: ["SIGNET_DATA_DIR": sqliteDir.path])
            #expect(shown.exitCode == 0 && shown.stdout == shownSQLite.stdout, "\(customer.name): \(shown.stdoutText) \(shown.stderr)")
        }

        let migrate = try StateE2E.signet(["migrate"], corpus: corpus, extra: onPostgres)
        #expect(migrate.exitCode == 0 && migrate.stdoutText.contains("up to date"), "\(migrate.stdoutText) \(migrate.stderr)")
        // A RESCIND_CONSENT's restriction, cleared from the CLI on PostgreSQL (a reader's
        // connection: no lease, no migration), then shown as cleared.
        let rescind = try #require(corpus.rescindedAppTransactionIds.first, "the fixtures hold a RESCIND_CONSENT")
        let restricted = try StateE2E.signet(["consent", "show", "--app-transaction-id", rescind], corpus: corpus, extra: onPostgres)
        #expect(restricted.exitCode == 0 && restricted.stdoutText.contains(#""restricted" : true"#), "\(restricted.stdoutText) \(restricted.stderr)")
        let cleared = try StateE2E.signet(["consent", "clear", "--app-transaction-id", rescind, "--by", "pg"], corpus: corpus, extra: onPostgres)
        #expect(cleared.exitCode == 0 && cleared.stdoutText.contains(#""restricted" : false"#), "\(cleared.stdoutText) \(cleared.stderr)")
        // The refund questions and the consent ledger on PostgreSQL, through the same commands.
        let listing = try StateE2E.signet(["consumption", "requests", "--since", "3650d"], corpus: corpus, extra: onPostgres)
        let listed = (try? JSONSerialization.jsonObject(with: Data(listing.stdout)) as? [String: Any])?["requests"] as? [[String: Any]]
        #expect(Set((listed ?? []).compactMap { $0["transactionId"] as? String }) == corpus.consumptionRequestTransactionIds,
                "\(listing.stdoutText) \(listing.stderr)")
        let granted = try StateE2E.signet(
            ["consumption", "consent", "grant", "--original-transaction-id", "2000000000000042", "--by", "pg"], corpus: corpus, extra: onPostgres)
        #expect(granted.exitCode == 0 && granted.stdoutText.contains(#""by" : "cli: pg""#), "\(granted.stdoutText) \(granted.stderr)")
        let shownConsent = try StateE2E.signet(
            ["consumption", "consent", "show", "--original-transaction-id", "2000000000000042"], corpus: corpus, extra: onPostgres)
        #expect(shownConsent.exitCode == 0 && shownConsent.stdout == granted.stdout, "\(shownConsent.stdoutText) \(shownConsent.stderr)")
        let missing = try StateE2E.signet(
            ["state", "show", "--original-transaction-id", "no-such-purchase"], corpus: corpus, extra: onPostgres)
        #expect(missing.exitCode == 1 && missing.stderr.contains("postgres://postgres:***@"), "\(missing.stderr)")
        for result in [first, replay, migrate, missing] {
            #expect(!result.stderr.contains(Self.password) && !result.stdoutText.contains(Self.password))
        }
    }

    @Test("an unreachable database fails the run with a message that hides the password", .ownThread)
    func unreachableDatabaseHidesThePassword() throws {
        let corpus = try StateCorpus.get()
        let dataDir = corpus.directory.appendingPathComponent("runs/pg-down-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        try FileManager.default.createDirectory(at: dataDir, withIntermediateDirectories: true)
        // Port 1 on loopback: nothing listens; the migrate command does not retry.
        let url = "postgres://signet:\(Self.password)@127.0.0.1:1/signet?sslmode=disable"
        let result = try StateE2E.signet(["migrate"], corpus: corpus, extra: ["SIGNET_DATABASE_URL": url, "SIGNET_DATA_DIR": dataDir.path])
        #expect(result.exitCode != 0)
        #expect(result.stderr.contains("127.0.0.1:1"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.password) && !result.stdoutText.contains(Self.password), "\(result.stderr)")
    }
}

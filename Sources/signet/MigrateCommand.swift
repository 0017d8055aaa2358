import ArgumentParser
import Foundation
import SignetPostgres

/// `signet migrate`: applies the PostgreSQL store's pending schema migrations.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Applies pending PostgreSQL schema migrations (also done by `signet run` at start).",
        discussion: """
            Idempotent and safe while other instances start or run: migrations are serialised
            on an advisory lock and each version is applied once. The URL comes from --url or
            SIGNET_DATABASE_URL (postgres://user:password@host:5432/database?sslmode=...);
            the password is never printed. docs/postgres.md describes the schema.
            """)

    @Option(help: "The database URL (default: $SIGNET_DATABASE_URL).")
    var url: String?

    func run() throws {
        guard let url = url ?? Terminal.environment["SIGNET_DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationFailure(description: "signet migrate: set --url or SIGNET_DATABASE_URL")
        }
        var options = PostgresStoreOptions(url: try PostgresURL(url))
        options.outageTimeout = .zero
        let applied = try PostgresStateStore.migrate(options: options)
        let target = options.url.redacted
        if applied.isEmpty {
            print("\(target): schema up to date (version \(PostgresMigrations.latestVersion))")
        } else {
            print("\(target): applied migration\(applied.count == 1 ? "" : "s") \(applied.map(String.init).joined(separator: ", "))")
        }
    }
}

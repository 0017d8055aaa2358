import AppStoreModels
import ArgumentParser
import Foundation
import SignetPostgres
import SignetState

/// Options shared by the commands that read the state store.
struct StoreOptions: ParsableArguments {
    @Option(help: "The state database (SQLite file). Default: PostgreSQL at $SIGNET_DATABASE_URL when set, else $SIGNET_DATA_DIR/signet.sqlite (SIGNET_DATA_DIR: signet-data).")
    var database: String?

    var path: String {
        if let database { return database }
        guard let dataDirectory = Terminal.environment["SIGNET_DATA_DIR"] else { return StateStoreConfiguration.defaultDatabasePath }
        return (dataDirectory as NSString).appendingPathComponent("signet.sqlite")
    }

    /// The PostgreSQL URL `signet run`'s default pipelines use, unless --database names a file.
    var databaseURL: String? {
        guard database == nil, let url = Terminal.environment["SIGNET_DATABASE_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// What messages name: the file, or the database URL without its password.
    var location: String {
        guard let databaseURL else { return path }
        return (try? PostgresURL(databaseURL).redacted) ?? "SIGNET_DATABASE_URL"
    }

    /// Opens the store read-only; a missing file is a clear error, not an empty answer.
    /// SIGNET_DATABASE_URL selects PostgreSQL, as it does for the default pipelines.
    ///
    /// `writingBesideThePipeline` is for a short write a running pipeline may sit beside
    /// (`signet consent clear`, the consumption ledger): PostgreSQL as a reader still (no
    /// lease), SQLite writable without taking the pipeline writer's lock (SQLite's own locking
    /// orders the two). Such a write may come before the first `signet run` (a backend records
    /// consent at sign-up), so it creates the store as `run` would: the SQLite file and its
    /// schema, or PostgreSQL's pending migrations.
    func open(writingBesideThePipeline: Bool = false) throws -> any StoreRoles {
        if let databaseURL {
            if writingBesideThePipeline {
                var options = PostgresStoreOptions(url: try PostgresURL(databaseURL))
                options.outageTimeout = .zero
                _ = try PostgresStateStore.migrate(options: options)
            }
            return try PostgresStateStore.openReadOnly(url: databaseURL)
        }
        guard writingBesideThePipeline || FileManager.default.fileExists(atPath: path) else {
            throw ConfigurationFailure(description: "signet: no state database at '\(path)' (set --database or SIGNET_DATA_DIR)")
        }
        var options = SQLiteStateStore.Options()
        options.readOnly = !writingBesideThePipeline
        return try SQLiteStateStore(path: path, options: options, lockingWriter: false)
    }
}

extension StoreOptions {
    /// Prints what `read` answers from the store opened read-only; when it answers nothing,
    /// says `missing` (and where) and exits 1.
    func show(_ missing: String, _ read: (any StoreRoles) throws -> [UInt8]?) throws {
        let database = try open()
        defer { try? database.close() }
        guard let json = try read(database) else {
            Terminal.error("\(missing) in \(location)")
            throw ExitCode.failure
        }
        try Terminal.printLine(json)
    }
}

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Reads subscription state and history from the store.",
        subcommands: [Show.self, History.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the stored snapshot of one purchase as JSON.",
            discussion: """
                The snapshot is what the transition stage derived from the newest signed transaction and renewal info it has seen for this originalTransactionId, as stored when the last notification was applied: its "asOf" says when. It is not re-evaluated at the current time (an expired subscription may still show "active" here); `signet entitlements` answers for now. Exit 1 when none is stored.

                Example:
                  signet state show --original-transaction-id 2000000123456789
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The originalTransactionId of the purchase.")
        var originalTransactionId: String

        func run() throws {
            try store.show("no state for originalTransactionId \(originalTransactionId)") { database in
                try StateJSON.subscription(originalTransactionId, in: database)
            }
        }
    }
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the events of one purchase, oldest first, as JSON.",
            discussion: """
                Each event exactly as it was published, with its outbox sequence, when it was committed ("createdAt") and when every sink acknowledged it ("deliveredAt", null while in flight). The store keeps an event until it is delivered, and after that for its outbox_retention (0s by default: delivered events are deleted at once), so set outbox_retention on the store (e.g. 90d) to keep a history. Exit 1 when the store knows neither the purchase nor any event of it.

                Examples:
                  signet state history --original-transaction-id 2000000123456789
                  signet state history --original-transaction-id 2000000123456789 --limit 10
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The originalTransactionId of the purchase.")
        var originalTransactionId: String

        @Option(help: "At most this many events: the newest ones.")
        var limit: Int = StateJSON.defaultHistoryLimit

        func validate() throws {
            guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() throws {
            let database = try store.open()
            defer { try? database.close() }
            let events = try database.eventHistory(originalTransactionId: originalTransactionId, limit: limit)
            guard let json = try StateJSON.history(originalTransactionId, events: events, in: database) else {
                Terminal.error("no state and no events for originalTransactionId \(originalTransactionId) in \(store.location)")
                throw ExitCode.failure
            }
            try Terminal.printLine(json)
            if events.isEmpty {
                Terminal.error(
                    "signet: no events kept for \(originalTransactionId): delivered events stay for the store's outbox_retention (set it, e.g. 90d, to keep a history)")
            }
        }
    }
}

struct EntitlementsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entitlements",
        abstract: "Answers \"what is this user entitled to now\" as JSON.",
        discussion: """
            Looks up every purchase of an account (--app-account-token, the UUID your app sets at purchase) or one purchase (--original-transaction-id), evaluates each at the current time (or --at, milliseconds since 1970) and prints a JSON array of entitlements with their state, entitled flag, product and expiry; each object's "asOf" is that instant, its "entitlements" the names its product or subscription group grants (a store's `entitlements:` setting); --entitlement keeps only the purchases granting that name, so "has this user pro?" is whether any of them says "entitled": true. `signet state show` prints the stored snapshot instead, which is not re-evaluated. An account with no purchases prints []. Works on a read-only copy of the data directory.

            Examples:
              signet entitlements --app-account-token 7e3fb20b-4cdb-47cc-936d-99d65f608138
              signet entitlements --original-transaction-id 2000000123456789
              signet entitlements --app-account-token "$TOKEN" --entitlement pro
            """)

    @OptionGroup var store: StoreOptions

    @Option(help: "The account's appAccountToken: a UUID, in either case.")
    var appAccountToken: String?

    @Option(help: "One purchase's originalTransactionId.")
    var originalTransactionId: String?

    @Option(help: "Only the purchases that grant this entitlement name (the store's `entitlements:` mapping).")
    var entitlement: String?

    @Option(help: "Only the purchases of this environment (Production or Sandbox), for a store that keeps both.")
    var environment: String?

    @Option(help: "Evaluate at this instant (ms since 1970) instead of now.")
    var at: Int64?

    func validate() throws {
        if (appAccountToken == nil) == (originalTransactionId == nil) {
            throw ValidationError("give exactly one of --app-account-token and --original-transaction-id")
        }
        if let appAccountToken, AppAccountToken(appAccountToken) == nil {
            throw ValidationError(AppAccountToken.Invalid(field: "--app-account-token", text: appAccountToken).description)
        }
    }

    func run() throws {
        let database = try store.open()
        defer { try? database.close() }
        let instant = at ?? Int64(Date().timeIntervalSince1970 * 1000)
        let query: StateJSON.Query =
            if let token = appAccountToken.flatMap({ AppAccountToken($0) }) { .appAccountToken(token) } else {
                .originalTransactionId(originalTransactionId ?? "")
            }
        try Terminal.printLine(try StateJSON.entitlements(query, named: entitlement, environment: environment, in: database, at: instant))
    }
}

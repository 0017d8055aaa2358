import ArgumentParser
import Foundation
import SignetState

/// `signet consent show|clear`: the consent restrictions RESCIND_CONSENT records.
struct ConsentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consent",
        abstract: "Shows or clears a consent restriction (RESCIND_CONSENT) of one app transaction.",
        discussion: """
            When a parent or guardian withdraws consent for a child's use of the app, Apple sends RESCIND_CONSENT naming the download of the app (its appTransactionId). Signet then answers `restricted: true` for every purchase made in that download (`signet entitlements`, the entitlement API, the PostgreSQL view) until the app's backend clears the restriction here or through `POST /v1/consent/{appTransactionId}/clear`, or a notification about the same app transaction signed after the rescind arrives. docs/state-machine.md has the rules.
            """,
        subcommands: [Show.self, Clear.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the consent restriction of one app transaction as JSON.",
            discussion: """
                Exit 1 when none was ever recorded.

                Example:
                  signet consent show --app-transaction-id 704556931264849920
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The appTransactionId RESCIND_CONSENT named.")
        var appTransactionId: String

        func run() throws {
            let database = try store.open()
            defer { try? database.close() }
            try ConsentCommand.print(appTransactionId, clearingBy: nil, in: database, location: store.location)
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Clears the consent restriction of one app transaction: its purchases answer `restricted: false` again.",
            discussion: """
                For when the app obtained consent again. The restriction is kept, marked cleared with when and by whom, so a RESCIND_CONSENT signed before the clearing (a retry, a late delivery) does not restrict again; a later one does. Safe while `signet run` writes the same store. Prints the restriction as cleared; exit 1 when none was ever recorded.

                Example:
                  signet consent clear --app-transaction-id 704556931264849920 --by ticket-4711
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The appTransactionId RESCIND_CONSENT named.")
        var appTransactionId: String

        @Option(help: "Who cleared it and why, kept with the restriction.")
        var by: String = "cli"

        func run() throws {
            let database = try store.open(writingBesideThePipeline: true)
            defer { try? database.close() }
            try ConsentCommand.print(appTransactionId, clearingBy: "cli: \(by)", in: database, location: store.location)
        }
    }

    static func print(_ appTransactionId: String, clearingBy who: String?, in database: any StoreRoles, location: String) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        guard let json = try StateJSON.consent(appTransactionId, clearingBy: who, in: database, at: now) else {
            Terminal.error("no consent restriction was ever recorded for appTransactionId \(appTransactionId) in \(location)")
            throw ExitCode.failure
        }
        try Terminal.printLine(json)
    }
}

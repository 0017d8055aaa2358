import ArgumentParser
import Foundation
import SignetAppStorePipeline
import SignetCore
import SignetState

/// `signet retention report`: what came of Apple's real-time retention requests.
struct RetentionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Reports what Signet answered Apple's retention requests, and which customers stayed.",
        discussion: """
            With a `retention:` section, the webhook answers Apple's Get Retention Message requests and keeps every answer in the state store: the request, the purchase, the rule (or why the default message), what was answered. The purchase's later notifications tell whether the customer stayed (DID_CHANGE_RENEWAL_STATUS, DID_CHANGE_RENEWAL_PREF, OFFER_REDEEMED, DID_RENEW) or left (renewal turned off, EXPIRED). docs/retention.md.
            """,
        subcommands: [Report.self])

    struct Report: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the retention answers given since an instant, and their outcomes, as JSON.",
            discussion: """
                requests (each request once, however often Apple sent it), answeredByKind (message, alternate_product, promotional_offer), defaultsByReason (no_rule, unknown_purchase, timeout, store_error, overloaded, signing_failed), and per rule its answers and how many customers were kept, lost or are undecided; defaultMessage gives the same for the customers shown the default: the baseline a rule is judged against. --since takes \(AppStoreHistoryWindow.instantForms). The same report: GET /v1/retention/report?since=MS on the entitlement API.

                Example:
                  signet retention report --since 90d
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "Only answers given at or after this instant.")
        var since: String = "30d"

        func validate() throws {
            guard AppStoreHistoryWindow.instant(since, now: WallClock.milliseconds()) != nil else {
                throw ValidationError("--since '\(since)' is not \(AppStoreHistoryWindow.instantForms)")
            }
        }

        func run() throws {
            let now = WallClock.milliseconds()
            let database = try store.open()
            defer { try? database.close() }
            let start = AppStoreHistoryWindow.instant(since, now: now) ?? 0
            try Terminal.printLine(try StateJSON.retentionReport(since: start, in: database, at: now))
        }
    }
}

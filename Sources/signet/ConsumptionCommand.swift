import AppStoreModels
import ArgumentParser
import Foundation
import SignetAppStorePipeline
import SignetState

/// `signet consumption consent show|grant|withdraw` and `signet consumption requests`: the
/// consumption consent ledger and the refund questions (CONSUMPTION_REQUEST) Apple asked.
struct ConsumptionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consumption",
        abstract: "Shows the refund questions Apple asked, and records customers' consent to answer them.",
        discussion: """
            When a customer asks Apple for a refund, Apple sends CONSUMPTION_REQUEST and asks the developer for consumption information within 12 hours, but only with the customer's consent: "If not, don't respond." The transition stage keeps every request with its deadline; this command lists them and keeps the consent ledger the app's backend also writes through `POST /v1/consumption/consent`. docs/consumption.md.
            """,
        subcommands: [Consent.self, Usage.self, Requests.self, Report.self])

    struct Consent: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Shows or records whether a customer consented to share consumption data with Apple.",
            discussion: """
                An entry is kept per customer (--app-account-token, the appAccountToken the app set on its purchases) or per purchase (--original-transaction-id). For a refund question the newest entry of the purchase's and its account's decides; at the same instant a withdrawal wins; none known means no consent, and Apple is not answered.
                """,
            subcommands: [Show.self, Grant.self, Withdraw.self])
    }

    /// Whom a ledger entry is about: exactly one of the two options.
    struct SubjectOptions: ParsableArguments {
        @Option(help: "The customer's appAccountToken (every purchase made with it): a UUID, in either case.")
        var appAccountToken: String?

        @Option(help: "One purchase (its originalTransactionId).")
        var originalTransactionId: String?

        func validate() throws {
            guard (appAccountToken == nil) != (originalTransactionId == nil) else {
                throw ValidationError("give exactly one of --app-account-token and --original-transaction-id")
            }
            if let appAccountToken, AppAccountToken(appAccountToken) == nil {
                throw ValidationError(AppAccountToken.Invalid(field: "--app-account-token", text: appAccountToken).description)
            }
            if let originalTransactionId, originalTransactionId.isEmpty || originalTransactionId.count > 200 {
                throw ValidationError("an originalTransactionId is 1 to 200 characters")
            }
        }

        /// The subject named; an appAccountToken in its canonical form (``validate()`` refused
        /// one that is no UUID), so any spelling of it names the same customer.
        var subject: ConsumptionConsent.Subject {
            if let token = appAccountToken.flatMap({ AppAccountToken($0) }) { return .appAccountToken(token) }
            return .originalTransactionId(originalTransactionId ?? "")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the ledger's entry for one customer or purchase as JSON.",
            discussion: """
                Exit 1 when none was recorded (no consent).

                Example:
                  signet consumption consent show --app-account-token "$TOKEN"
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var who: SubjectOptions

        func run() throws {
            try store.show("no consumption consent was recorded for \(who.subject.key)") { database in
                try StateJSON.consumptionConsent(who.subject, in: database)
            }
        }
    }

    struct Grant: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Records that a customer consented: their refund questions may be answered.",
            discussion: """
                Replaces the subject's earlier entry, kept with when and by whom. Safe while `signet run` writes the same store. Prints the entry that stands. --refund-preference records the customer's own preference, which wins over the pipeline's policy.

                Example:
                  signet consumption consent grant --app-account-token "$TOKEN" --by t-4711
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var who: SubjectOptions

        @Option(help: "Who recorded it and why, kept with the entry.")
        var by: String = "operator"

        @Option(help: "The customer's own refund preference, over the pipeline's policy: DECLINE, GRANT_FULL or GRANT_PRORATED.")
        var refundPreference: String?

        func validate() throws {
            if let refundPreference, !ConsumptionConsent.refundPreferences.contains(refundPreference) {
                throw ValidationError("--refund-preference is DECLINE, GRANT_FULL or GRANT_PRORATED, not '\(refundPreference)'")
            }
        }

        func run() throws {
            try ConsumptionCommand.record(
                ConsumptionConsent(who.subject, consented: true, at: Self.now, by: "cli: \(by)", refundPreference: refundPreference),
                store: store)
        }

        static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    }

    struct Withdraw: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Records that a customer withdrew (or refused) consent: their refund questions are not answered.",
            discussion: """
                Apple: once consent is withdrawn, no further data is sent. Requests already answered stay answered. Prints the entry that stands.

                Example:
                  signet consumption consent withdraw --app-account-token "$TOKEN" --by gdpr-88
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var who: SubjectOptions

        @Option(help: "Who recorded it and why, kept with the entry.")
        var by: String = "operator"

        func run() throws {
            try ConsumptionCommand.record(
                ConsumptionConsent(who.subject, consented: false, at: Grant.now, by: "cli: \(by)"), store: store)
        }
    }

    struct Requests: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lists the refund questions (CONSUMPTION_REQUEST) Apple asked, oldest first, as JSON.",
            discussion: """
                Each with its deadline (12 hours after Apple signed it), status (pending, answered, skipped for no consent, late, failed), the answer sent and Apple's decision (REFUND, REFUND_DECLINED, REFUND_REVERSED) once it came; `overdue` marks one still pending past its deadline. --since takes \(AppStoreHistoryWindow.instantForms).

                Example:
                  signet consumption requests --since 7d
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "Only requests Apple signed at or after this instant.")
        var since: String = "30d"

        @Option(help: "Most requests printed (1 to 10000; the answer says truncated when more were signed).")
        var limit: Int = StateJSON.defaultConsumptionRequestLimit

        func validate() throws {
            guard AppStoreHistoryWindow.instant(since, now: Grant.now) != nil else {
                throw ValidationError("--since '\(since)' is not \(AppStoreHistoryWindow.instantForms)")
            }
            let limits = StateJSON.consumptionRequestLimits
            guard limits.contains(limit) else {
                throw ValidationError("--limit is \(limits.lowerBound) to \(limits.upperBound); for more, page with --since (the last request's requestedAt)")
            }
        }

        func run() throws {
            let now = Grant.now
            let database = try store.open()
            defer { try? database.close() }
            let start = AppStoreHistoryWindow.instant(since, now: now) ?? 0
            try Terminal.printLine(try StateJSON.consumptionRequests(since: start, limit: limit, in: database, at: now))
        }
    }

    struct Usage: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Shows or records how much of a purchase the customer used, for the answer to Apple.",
            discussion: """
                Signet cannot know how much of a consumable or non-consumable was used; the app can, and tells Signet here or through `POST /v1/consumption/usage`. The answer to a refund question about the transaction then carries it as consumptionPercentage (milliunits: 100000 = 100%), and a delivery status the app knows better than Signet's state (UNDELIVERED_SERVER_OUTAGE, ...) replaces the derived one.
                """,
            subcommands: [ShowUsage.self, SetUsage.self])
    }

    struct ShowUsage: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Prints what was recorded of one transaction's use as JSON.",
            discussion: """
                Exit 1 when nothing was recorded.

                Example:
                  signet consumption usage show --transaction-id 2000000123456789
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The transaction (the id a CONSUMPTION_REQUEST names).")
        var transactionId: String

        func run() throws {
            try store.show("nothing was recorded about the use of transaction \(transactionId)") { database in
                try StateJSON.consumptionUsage(transactionId: transactionId, in: database)
            }
        }
    }

    struct SetUsage: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Records how much of one transaction was consumed, or how it was delivered.",
            discussion: """
                Replaces the transaction's earlier record. Safe while `signet run` writes the same store. Prints the record that stands.

                Example:
                  signet consumption usage set --transaction-id "$ID" --percentage 40000
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "The transaction (the id a CONSUMPTION_REQUEST names).")
        var transactionId: String

        @Option(help: "Consumed share in milliunits, 0 to 100000 (100000 = 100%).")
        var percentage: Int?

        @Option(help: "DELIVERED, UNDELIVERED_QUALITY_ISSUE, UNDELIVERED_WRONG_ITEM, UNDELIVERED_SERVER_OUTAGE or UNDELIVERED_OTHER.")
        var deliveryStatus: String?

        @Option(help: "true or false: whether this customer was offered a sample, trial or preview before buying (wins over the stage's sample_content_provided settings).")
        var sampleContentProvided: Bool?

        @Option(help: "Who recorded it and why, kept with the record.")
        var by: String = "operator"

        func validate() throws {
            if let problem = usage.problem { throw ValidationError(problem) }
        }

        var usage: ConsumptionUsage {
            ConsumptionUsage(
                transactionId: transactionId, consumptionPercentage: percentage, deliveryStatus: deliveryStatus,
                sampleContentProvided: sampleContentProvided, at: Grant.now, by: "cli: \(by)")
        }

        func run() throws {
            let database = try store.open(writingBesideThePipeline: true)
            defer { try? database.close() }
            try Terminal.printLine(try StateJSON.recordConsumptionUsage(usage, in: database))
        }
    }

    struct Report: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints what became of the refund questions Apple asked, as JSON.",
            discussion: """
                In total and per product: requests, answered, skipped (no consent), late, failed, pending and overdue (pending past the deadline: nothing is answering them), repeats; and Apple's decisions (REFUND refunded, REFUND_DECLINED declined, REFUND_REVERSED reversed, or still undecided) by the refund preference sent (NONE: none), and for the requests not answered. --since takes \(AppStoreHistoryWindow.instantForms).

                Example:
                  signet consumption report --since 90d
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "Only requests Apple signed at or after this instant.")
        var since: String = "30d"

        func validate() throws {
            guard AppStoreHistoryWindow.instant(since, now: Grant.now) != nil else {
                throw ValidationError("--since '\(since)' is not \(AppStoreHistoryWindow.instantForms)")
            }
        }

        func run() throws {
            let now = Grant.now
            let database = try store.open()
            defer { try? database.close() }
            let start = AppStoreHistoryWindow.instant(since, now: now) ?? 0
            try Terminal.printLine(try StateJSON.consumptionReport(since: start, in: database, at: now))
        }
    }

    static func record(_ consent: ConsumptionConsent, store: StoreOptions) throws {
        let database = try store.open(writingBesideThePipeline: true)
        defer { try? database.close() }
        try Terminal.printLine(try StateJSON.recordConsumptionConsent(consent, in: database))
    }
}

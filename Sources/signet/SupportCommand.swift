import AppStoreModels
import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetJWS
import SignetOpenSSL
import SignetState

/// `signet support ...`: Apple's customer-support calls (docs/support.md).
struct SupportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "support",
        abstract: "Answers a customer: finds purchases by order id, lists refunds, extends renewal dates, sets the app account token.",
        discussion: """
            Each subcommand is one of Apple's App Store Server API calls for the app and environment of SIGNET_BUNDLE_ID and SIGNET_ENVIRONMENT, with the In-App Purchase key's variables (`signet help backfill`). Signed answers are verified like notifications (SIGNET_ROOT_CERTS, default Apple's root) before anything is shown. Requests are checked against Apple's documented rules before they are sent (an extension of more than 90 days, an identifier that is not a UUID where Apple wants one: exit 2, nothing sent). Each call waits its turn in its endpoint's budget (Apple: Look Up Order ID and refund history 10/s, extensions and app account tokens 20/s, the mass extension 1/s; Sandbox a tenth).

            An extension's effect reaches Signet as Apple's RENEWAL_EXTENDED notification, through the pipeline as usual.

            Actions (extend, extend-all, set-token) are recorded in the state store's audit log before Apple is asked and finished with Apple's answer: who (--operator, else SIGNET_OPERATOR, else the login name), when, what, Apple's answer. The same --request-id again never acts twice: once Apple did it, the recorded answer is printed and Apple is not asked again. `signet support audit` exports the log.

            Exit status: 0 done, 1 Apple refused or could not be reached (its error and what to do printed), 2 a request Apple's rules refuse or a configuration problem.
            """,
        subcommands: [
            Customer.self, Order.self, Refunds.self, Extend.self, ExtendAll.self, ExtendStatus.self, SetToken.self, AppTransaction.self,
            Audit.self,
        ])

    /// A client from the environment, `body` run with it, and every failure turned into the exit status above.
    static func withClient(_ command: String, _ body: (AppStoreServerAPIClient) async throws -> Void) async throws {
        try await AppStoreCall.withClient("signet support \(command)", explanation: explanation, body)
    }

    /// What Apple's support error codes mean, for the ones an operator meets.
    static func explanation(_ error: AppStoreAPIError) -> String? { SupportDesk.explanation(error) }

    /// The verifier for Apple's signed answers from `environment`'s store: SIGNET_ROOT_CERTS
    /// (Apple's root unless set), that environment, SIGNET_BUNDLE_ID and SIGNET_APP_APPLE_ID
    /// when set, as the webhook verifies notifications.
    static func verifier(for environment: AppStoreEnvironment) throws -> AppStoreVerifier {
        let env = Terminal.environment
        func value(_ name: String) -> String? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        let roots = value("SIGNET_ROOT_CERTS")?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? ["apple"]
        do {
            let configuration = VerifierConfiguration(
                roots: try AppleRoots.load(roots), environments: [environment], bundleId: value("SIGNET_BUNDLE_ID"),
                appAppleId: value("SIGNET_APP_APPLE_ID").flatMap { Int64($0) })
            return try AppStoreVerifier(configuration: configuration)
        } catch {
            throw ConfigurationFailure(description: "signet support: \(error)")
        }
    }

    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try Terminal.printLine(Array(try encoder.encode(value)))
    }

    /// One verified transaction as the support commands print it.
    struct PrintedTransaction: Encodable {
        var transactionId: String?
        var originalTransactionId: String?
        var productId: String?
        var type: String?
        var purchaseDate: Int64?
        var expiresDate: Int64?
        var revocationDate: Int64?
        var revocationReason: Int?
        var appAccountToken: String?
        var environment: String?
        /// Signet's state of the purchase, when its store knows it.
        var signetState: String?

        init(_ transaction: VerifiedTransaction, state: String? = nil) {
            let payload = transaction.payload
            transactionId = payload.transactionId
            originalTransactionId = payload.originalTransactionId
            productId = payload.productId
            type = payload.type?.rawValue
            purchaseDate = payload.purchaseDate?.millisecondsSince1970
            expiresDate = payload.expiresDate?.millisecondsSince1970
            revocationDate = payload.revocationDate?.millisecondsSince1970
            revocationReason = payload.revocationReason?.rawValue
            appAccountToken = payload.parsedAppAccountToken?.description
            environment = payload.environment?.rawValue
            signetState = state
        }
    }

    // MARK: order

    struct Order: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "order",
            abstract: "Finds a customer's purchases by the order id on Apple's email receipt (Look Up Order ID).",
            discussion: """
                Prints {orderId, valid, transactions}: each transaction verified, with Signet's state of its purchase when the store knows it (--database, else the shipped pipelines' store; left out when there is none). Apple serves this call in Production only. An order Apple does not know as this app's is valid: false and exit 1.

                Examples:
                  signet support order MK5TTTVWJH
                  signet support order MK5TTTVWJH --database signet-data/signet.sqlite
                """)

        @Argument(help: "The order id from the customer's receipt (or purchase history).")
        var orderId: String

        @OptionGroup var store: StoreOptions

        struct Printed: Encodable {
            var orderId: String
            var valid: Bool
            var transactions: [PrintedTransaction]
        }

        func run() async throws {
            let verifier = try SupportCommand.verifier(for: .production)
            var valid = true
            try await SupportCommand.withClient("order") { client in
                let answer = try await client.lookUpOrder(orderId: orderId)
                let transactions = try (answer.signedTransactions ?? []).map { try verifier.verifyTransaction($0) }
                let states = SupportCommand.snapshots(transactions.compactMap(\.payload.originalTransactionId), store).mapValues(\.state.rawValue)
                valid = answer.isValid
                try SupportCommand.printJSON(Printed(
                    orderId: orderId, valid: answer.isValid,
                    transactions: transactions.map { PrintedTransaction($0, state: $0.payload.originalTransactionId.flatMap { states[$0] }) }))
            }
            if !valid {
                Terminal.error("signet support order: Apple does not know order \(orderId) as one of this app's (status 1)")
                throw ExitCode.failure
            }
        }
    }

    /// The store's snapshots of these purchases, when a store is there to ask (none, or one it
    /// cannot open: an empty answer; the commands work without Signet's view).
    static func snapshots(_ ids: [String], _ store: StoreOptions) -> [String: SubscriptionSnapshot] {
        guard store.databaseURL != nil || FileManager.default.fileExists(atPath: store.path), let database = try? store.open() else { return [:] }
        defer { try? database.close() }
        var snapshots: [String: SubscriptionSnapshot] = [:]
        for id in ids {
            if let snapshot = try? database.subscription(originalTransactionId: id) { snapshots[id] = snapshot }
        }
        return snapshots
    }

    // MARK: refunds

    struct Refunds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refunds",
            abstract: "Lists every refund Apple granted the customer (Get Refund History), oldest first.",
            discussion: """
                Any transaction id of the customer names them all. Prints a JSON array of the refunded transactions, each verified (revocationDate, revocationReason), every page.

                Examples:
                  signet support refunds 2000000000000001
                """)

        @Argument(help: "Any transaction id (or originalTransactionId) of the customer.")
        var transactionId: String

        @Option(help: "Production or Sandbox: the store the customer's purchases are in (default: SIGNET_ENVIRONMENT's).")
        var environment: String?

        func run() async throws {
            let asked = try SupportCommand.environment(environment)
            try await SupportCommand.withClient("refunds") { client in
                let store = try SupportCommand.store(asked, of: client)
                let refunds = try await client.refundHistory(transactionId: transactionId, verifier: try SupportCommand.verifier(for: store), in: store)
                try SupportCommand.printJSON(refunds.map { PrintedTransaction($0) })
            }
        }
    }

    /// The store to ask: `asked`, or the client's own; one the client cannot reach (Production
    /// from a Sandbox client) is refused before sending.
    static func store(_ asked: AppStoreEnvironment?, of client: AppStoreServerAPIClient) throws -> AppStoreEnvironment {
        guard let asked else { return client.configuration.environment }
        guard client.reaches(asked) else {
            throw ConfigurationFailure(
                description: "signet support: not sent: a client configured for \(client.configuration.environment.rawValue) (SIGNET_ENVIRONMENT) cannot ask \(asked.rawValue)")
        }
        return asked
    }

    static func environment(_ name: String?) throws -> AppStoreEnvironment? {
        guard let name else { return nil }
        guard let environment = [AppStoreEnvironment.production, .sandbox].first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
            throw ValidationError("--environment is Production or Sandbox, not '\(name)'")
        }
        return environment
    }

    // MARK: extend

    struct Extend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend",
            abstract: "Moves one subscription's renewal date later (Extend a Subscription Renewal Date).",
            discussion: """
                Irreversible: Apple moves the renewal date by 1 to 90 days, emails the customer and sends RENEWAL_EXTENDED, which updates Signet's state through the pipeline. Apple extends only active auto-renewable subscriptions with a paid period behind them, at most twice within 365 days, never a family member's copy. Before sending, the purchase is checked against Signet's store (--database, else the shipped pipelines' store): one Signet knows to be expired, refunded, in billing retry, family shared or not an auto-renewable subscription is refused here, exit 2, nothing sent (--skip-state-check sends anyway). A purchase the store does not know is sent, and Apple decides.

                --request-id identifies the request (default: a new UUID, printed). After a timeout, run the same command with the same --request-id: Apple asks for exactly that.

                Reasons: undeclared (0), customer-satisfaction (1), other (2), service-issue (3).

                Examples:
                  signet support extend 2000000000000001 --days 7 --reason service-issue
                  signet support extend 2000000000000001 --days 30 \\
                    --reason customer-satisfaction \\
                    --request-id 7e1d6a3c-0f2b-4b8e-9c3d-5a6b7c8d9e0f
                """)

        @Argument(help: "The purchase's originalTransactionId.")
        var originalTransactionId: String

        @OptionGroup var terms: ExtensionTerms

        @Option(name: .customLong("request-id"), help: "The request's identifier (at most 128 characters); default: a new UUID.")
        var requestId: String?

        @Option(help: "Production or Sandbox: the store the purchase is in (default: Signet's record of it, else SIGNET_ENVIRONMENT's).")
        var environment: String?

        @Flag(name: .customLong("skip-state-check"), help: "Send even when Signet's store says Apple would refuse.")
        var skipStateCheck = false

        @OptionGroup var acting: Acting

        struct Printed: Encodable {
            var originalTransactionId: String
            var requestIdentifier: String
            var success: Bool
            var effectiveDate: Int64?
            var webOrderLineItemId: String?
            var note: String
        }

        func run() async throws {
            let code = try terms.reasonCode("extend")
            let request: ExtendRenewalDateRequest
            do {
                request = try ExtendRenewalDateRequest(
                    extendByDays: terms.days, extendReasonCode: code, requestIdentifier: requestId ?? UUID().uuidString.lowercased()
                ).validated()
            } catch {
                throw ConfigurationFailure(description: "signet support extend: not sent: \(error)")
            }
            let audit = try SupportAuditLog.open(acting.store, actor: acting.actor, command: "extend")
            defer { audit.close() }
            let now = WallClock.milliseconds()
            let record = SupportActionRecord(
                requestIdentifier: request.requestIdentifier, actor: audit.actor, action: "extend", originalTransactionId: originalTransactionId,
                parameters: try ConsumptionRecordCoding.encode(request), at: now)
            /// The answer Apple gave under this identifier before: printed, Apple not asked again.
            func replay(_ kept: SupportActionRecord) throws -> Bool {
                guard kept.status == .done, let answered = kept.answer else { return false }
                let answer = try ConsumptionRecordCoding.decode(ExtendRenewalDateResponse.self, from: answered)
                try SupportCommand.printJSON(Printed(
                    originalTransactionId: originalTransactionId, requestIdentifier: request.requestIdentifier, success: answer.success,
                    effectiveDate: answer.effectiveDate, webOrderLineItemId: answer.webOrderLineItemId,
                    note: "done already by \(kept.actor) (the audit log); Apple was not asked again"))
                return true
            }
            // Done before under this identifier: the recorded answer, whatever the state is now.
            if let kept = try audit.previous(record), try replay(kept) { return }
            let snapshot = SupportCommand.snapshots([originalTransactionId], acting.store)[originalTransactionId]
            if !skipStateCheck,
                let why = try audit.desk.extensionRefusal(snapshot, originalTransactionId: originalTransactionId, now: now, besides: request.requestIdentifier)
            {
                throw ConfigurationFailure(
                    description: "signet support extend: not sent: \(why) (Signet's store, \(acting.store.location)); --skip-state-check sends anyway")
            }
            if snapshot == nil {
                Terminal.error("signet support extend: Signet's store does not know purchase \(originalTransactionId); sending, Apple decides")
            }
            let environment = try SupportCommand.environment(self.environment) ?? snapshot?.environment.map(AppStoreEnvironment.init(rawValue:))
            try await SupportCommand.withClient("extend") { client in
                // Recorded once a client exists, just before Apple is asked (a concurrent run of
                // the same identifier that finished first is replayed).
                if case .done(let kept) = try audit.begin(record), try replay(kept) { return }
                // Asked for explicitly, the store must be reachable; as recorded, it falls back to the configured one.
                let store = self.environment != nil ? try SupportCommand.store(environment, of: client)
                    : environment.flatMap { client.reaches($0) ? $0 : nil } ?? client.configuration.environment
                let answer = try await audit.desk.finish(record, {
                    try await client.extendRenewalDate(originalTransactionId: originalTransactionId, request, in: store)
                }, succeeded: \.success)
                try SupportCommand.printJSON(Printed(
                    originalTransactionId: originalTransactionId, requestIdentifier: request.requestIdentifier, success: answer.success,
                    effectiveDate: answer.effectiveDate, webOrderLineItemId: answer.webOrderLineItemId,
                    note: answer.success
                        ? "Apple sends RENEWAL_EXTENDED; Signet's state changes when it arrives"
                        : "Apple did not extend the renewal date"))
                if !answer.success { throw ExitCode.failure }
            }
        }
    }

    // MARK: extend-all

    struct ExtendAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend-all",
            abstract: "Moves the renewal date of every active subscriber of a product (Apple's mass extension).",
            discussion: """
                Irreversible. Apple answers at once and works for hours or days; the request identifier (default: a new UUID) is printed first, so an interrupted --wait resumes with `signet support extend-status --product P --request-id ID --wait`, and sending the same request again (same --request-id) extends nobody twice. Apple sends RENEWAL_EXTENDED for each subscription extended, RENEWAL_EXTENSION FAILURE for each that failed, and RENEWAL_EXTENSION SUMMARY at the end.

                Examples:
                  signet support extend-all --product com.example.pro.monthly \\
                    --days 3 --reason service-issue --wait
                  signet support extend-all --product com.example.pro.monthly \\
                    --days 3 --reason service-issue --storefronts USA,CAN
                """)

        @Option(help: "The auto-renewable subscription's product id.")
        var product: String

        @OptionGroup var terms: ExtensionTerms

        @Option(help: "Storefronts as ISO 3166-1 alpha-3 codes, comma-separated (USA,FRA); default: all.")
        var storefronts: String?

        @Option(name: .customLong("request-id"), help: "The request's identifier, a UUID; default: a new one.")
        var requestId: String?

        @OptionGroup var polling: Polling

        @OptionGroup var acting: Acting

        func run() async throws {
            let code = try terms.reasonCode("extend-all")
            let request: MassExtendRenewalDateRequest
            do {
                request = try MassExtendRenewalDateRequest(
                    extendByDays: terms.days, extendReasonCode: code, requestIdentifier: requestId ?? UUID().uuidString.lowercased(),
                    productId: product,
                    storefrontCountryCodes: storefronts.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
                ).validated()
            } catch {
                throw ConfigurationFailure(description: "signet support extend-all: not sent: \(error)")
            }
            let audit = try SupportAuditLog.open(acting.store, actor: acting.actor, command: "extend-all")
            defer { audit.close() }
            let record = SupportActionRecord(
                requestIdentifier: request.requestIdentifier, actor: audit.actor, action: "extend_all", productId: product,
                parameters: try ConsumptionRecordCoding.encode(request), at: WallClock.milliseconds())
            try await SupportCommand.withClient("extend-all") { client in
                _ = try audit.begin(record)
                // Apple takes the same identifier again without extending twice: asked even when done, so --wait can follow it.
                let answer = try await audit.desk.finish(record) { try await client.massExtendRenewalDates(request) }
                Terminal.error("signet support extend-all: Apple took request \(answer.requestIdentifier) for \(product)")
                if polling.wait {
                    try await polling.untilComplete(client, productId: product, requestIdentifier: answer.requestIdentifier)
                } else {
                    try SupportCommand.printJSON(MassExtendRenewalDateStatusResponse(
                        requestIdentifier: answer.requestIdentifier, complete: false))
                }
            }
        }
    }

    /// `--wait` and how often to ask.
    struct Polling: ParsableArguments {
        @Flag(help: "Ask Apple until the extension is complete, then print its counts.")
        var wait = false

        @Option(name: .customLong("poll-interval"), help: "With --wait: between two questions (default 30s; Apple allows one a second).")
        var pollInterval = "30s"

        @Option(help: "With --wait: give up after this long (default 72h); run extend-status --wait again to resume.")
        var timeout = "72h"

        /// Asks for the status until complete, a line on stderr per answer; prints the final status.
        func untilComplete(_ client: AppStoreServerAPIClient, productId: String, requestIdentifier: String) async throws {
            guard case .success(let interval) = ConfigDuration.parse(pollInterval), interval >= .seconds(1) else {
                throw ConfigurationFailure(description: "signet support: --poll-interval must be a duration of at least 1s, such as 30s")
            }
            guard case .success(let limit) = ConfigDuration.parse(timeout) else {
                throw ConfigurationFailure(description: "signet support: --timeout must be a duration such as 72h")
            }
            let deadline = ContinuousClock.now + limit
            var asked = 0
            while true {
                let status = try await client.massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier)
                asked += 1
                if status.complete {
                    Terminal.error(
                        "signet support: \(requestIdentifier) complete (asked \(asked) times): \(status.succeededCount ?? 0) extended, \(status.failedCount ?? 0) failed")
                    try SupportCommand.printJSON(status)
                    return
                }
                guard ContinuousClock.now + interval < deadline else {
                    try SupportCommand.printJSON(status)
                    Terminal.error(
                        "signet support: \(requestIdentifier) not complete after \(timeout); resume with `signet support extend-status --product \(productId) --request-id \(requestIdentifier) --wait`")
                    throw ExitCode.failure
                }
                Terminal.error("signet support: \(requestIdentifier) in progress (asked \(asked) times); next in \(pollInterval)")
                try await Task.sleep(for: interval)
            }
        }
    }

    // MARK: extend-status

    struct ExtendStatus: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend-status",
            abstract: "Shows how a mass extension stands (Get Status of Subscription Renewal Date Extensions).",
            discussion: """
                Prints {requestIdentifier, complete, completeDate, succeededCount, failedCount}; the date and counts come once Apple is done. --wait asks until then.

                Examples:
                  signet support extend-status --product com.example.pro.monthly \\
                    --request-id 7e1d6a3c-0f2b-4b8e-9c3d-5a6b7c8d9e0f --wait
                """)

        @Option(help: "The product the extension was for.")
        var product: String

        @Option(name: .customLong("request-id"), help: "The request identifier extend-all printed.")
        var requestId: String

        @OptionGroup var polling: Polling

        func run() async throws {
            try await SupportCommand.withClient("extend-status") { client in
                if polling.wait {
                    try await polling.untilComplete(client, productId: product, requestIdentifier: requestId)
                } else {
                    try SupportCommand.printJSON(try await client.massExtensionStatus(productId: product, requestIdentifier: requestId))
                }
            }
        }
    }

    // MARK: set-token

    struct SetToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-token",
            abstract: "Sets a purchase's appAccountToken at Apple (Set App Account Token).",
            discussion: """
                For purchases made outside the app (an offer code redeemed in the App Store) or tied to the wrong account: Apple replaces the token on the purchase's current and later transactions, not on past ones. Any product type; never a family-shared copy. The token is a UUID (sent lower-case). Signet's state takes the new token from the next notification or reconcile.

                Examples:
                  signet support set-token 2000000000000001 \\
                    5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6F
                """)

        @Argument(help: "The purchase's originalTransactionId.")
        var originalTransactionId: String

        @Argument(help: "The customer's account UUID in your service.")
        var appAccountToken: String

        @Option(help: "Production or Sandbox: the store the purchase is in (default: SIGNET_ENVIRONMENT's).")
        var environment: String?

        @Option(name: .customLong("request-id"), help: "The action's identifier in the audit log; default: a new UUID.")
        var requestId: String?

        @OptionGroup var acting: Acting

        /// What the audit log keeps as Apple's answer (Apple answers 200 with no body).
        struct Done: Codable {
            var appAccountToken: String
        }

        func run() async throws {
            guard let token = AppAccountToken(appAccountToken) else {
                throw ConfigurationFailure(
                    description: "signet support set-token: not sent: appAccountToken '\(appAccountToken)' is not a UUID (Apple would answer InvalidAppAccountTokenUUIDError)")
            }
            let environment = try SupportCommand.environment(environment)
            let audit = try SupportAuditLog.open(acting.store, actor: acting.actor, command: "set-token")
            defer { audit.close() }
            let record = SupportActionRecord(
                requestIdentifier: SupportDesk.canonical(requestId) ?? UUID().uuidString.lowercased(), actor: audit.actor, action: "set_token",
                originalTransactionId: originalTransactionId, parameters: try ConsumptionRecordCoding.encode(Done(appAccountToken: token.description)),
                at: WallClock.milliseconds())
            try await SupportCommand.withClient("set-token") { client in
                if case .done(let kept) = try audit.begin(record) {
                    try Terminal.printLine(Array("appAccountToken of \(originalTransactionId) set to \(token) already by \(kept.actor) (the audit log)".utf8))
                    return
                }
                let store = try SupportCommand.store(environment, of: client)
                _ = try await audit.desk.finish(record) {
                    try await client.setAppAccountToken(originalTransactionId: originalTransactionId, token, in: store)
                    return Done(appAccountToken: token.description)
                }
                try Terminal.printLine(Array("appAccountToken of \(originalTransactionId) set to \(token)".utf8))
            }
        }
    }

    // MARK: app-transaction

    struct AppTransaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-transaction",
            abstract: "Shows the customer's app transaction (Get App Transaction Info), verified.",
            discussion: """
                Any transaction id of the customer names it. Prints the verified app transaction's payload (appTransactionId, originalPurchaseDate, originalApplicationVersion, ...).

                Examples:
                  signet support app-transaction 2000000000000001
                """)

        @Argument(help: "Any transaction id of the customer.")
        var transactionId: String

        @Option(help: "Production or Sandbox (default: SIGNET_ENVIRONMENT's).")
        var environment: String?

        func run() async throws {
            let asked = try SupportCommand.environment(environment)
            try await SupportCommand.withClient("app-transaction") { client in
                let store = try SupportCommand.store(asked, of: client)
                let answer = try await client.appTransactionInfo(transactionId: transactionId, in: store)
                try SupportCommand.printJSON(try SupportCommand.verifier(for: store).verifyAppTransaction(answer.signedAppTransactionInfo).payload)
            }
        }
    }

    // MARK: audit

    struct Audit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit",
            abstract: "Exports the audit log of support actions, oldest first, one JSON object a line.",
            discussion: """
                Each line: requestIdentifier, actor, action (extend, extend_all, set_token), originalTransactionId or productId, parameters (the request sent, JSON), at, status (pending: Apple not answered yet or the command stopped mid-call; done; refused; failed), answer (Apple's answer or error), answeredAt. Times in ms since 1970.

                Examples:
                  signet support audit
                  signet support audit --since 7d
                  signet support audit --purchase 2000000000000001
                """)

        @Option(help: "How far back: \(AppStoreHistoryWindow.instantForms) (default 30d).")
        var since = "30d"

        @Option(help: "Only the actions on this purchase (its originalTransactionId), whatever their age.")
        var purchase: String?

        @OptionGroup var store: StoreOptions

        func run() throws {
            let database = try store.open()
            defer { try? database.close() }
            let actions: [SupportActionRecord]
            if let purchase {
                actions = try database.supportActions(originalTransactionId: purchase)
            } else {
                guard let instant = AppStoreHistoryWindow.instant(since, now: WallClock.milliseconds()) else {
                    throw ValidationError("--since '\(since)' is not \(AppStoreHistoryWindow.instantForms)")
                }
                actions = try database.supportActions(since: instant, limit: 1_000_000)
            }
            for action in actions { try Terminal.printLine(Array(try ConsumptionRecordCoding.encode(action).utf8)) }
        }
    }

    /// `--days` and `--reason`, as both extensions take them.
    struct ExtensionTerms: ParsableArguments {
        @Option(help: "Days to move the renewal date by: 1 to 90.")
        var days: Int

        @Option(help: "undeclared, customer-satisfaction, other or service-issue (or Apple's code, 0 to 3).")
        var reason: String

        func reasonCode(_ command: String) throws -> ExtendReasonCode {
            guard let code = ExtendReasonCode(name: reason) else {
                throw ConfigurationFailure(
                    description: "signet support \(command): --reason is undeclared, customer-satisfaction, other or service-issue (0 to 3), not '\(reason)'")
            }
            return code
        }
    }

    /// Who acts, and the store whose audit log records it.
    struct Acting: ParsableArguments {
        @Option(name: .customLong("operator"), help: "Who acts, for the audit log (default: SIGNET_OPERATOR, else the login name).")
        var actor: String?

        @OptionGroup var store: StoreOptions
    }

    // MARK: customer

    struct Customer: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "customer",
            abstract: "Shows one customer from Signet's store: purchases, why they have access or not, and the timeline.",
            discussion: """
                QUERY is an originalTransactionId, an appAccountToken (any case) or an appTransactionId. Prints {query, matchedBy, purchases, timeline}: each purchase with its state, entitlement names, expiry and "why", one sentence from the state machine (for example "In billing retry since 2 Dec 2026, access kept by the grace period until 8 Dec 2026."); the timeline, newest first, merges entitlement events, refund questions and their outcomes, retention answers and outcomes, consent, migrations and operator actions (the audit log), each at Apple's signedDate where Apple signed it. Read-only. The same: GET /v1/customers/QUERY on the entitlement API. A customer known only by an order id: `signet support order` first.

                Examples:
                  signet support customer 2000000000000001
                  signet support customer 5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6F
                """)

        @Argument(help: "An originalTransactionId, an appAccountToken or an appTransactionId.")
        var query: String

        @OptionGroup var store: StoreOptions

        func run() throws {
            try store.show("no purchase with the originalTransactionId, appAccountToken or appTransactionId '\(query)'") { database in
                try CustomerProfile.find(query, in: database, now: WallClock.milliseconds()).map { try StateJSON.encode($0) }
            }
        }
    }
}

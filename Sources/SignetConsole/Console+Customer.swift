import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetJWS
import SignetState

// Reading: the home page, the audit log, search and the customer's page.
extension Console {
    /// One audit log row as the pages show it.
    struct ActionRow {
        var requestIdentifier: String
        var when: String
        var actor: String
        var action: String
        var originalTransactionId: String?
        var productId: String?
        var status: String
        var answer: String

        init(_ record: SupportActionRecord) {
            requestIdentifier = record.requestIdentifier
            when = ConsoleTime.text(record.at)
            actor = record.actor
            action = record.action
            originalTransactionId = record.originalTransactionId
            productId = record.productId ?? ConsoleAction.deadLetterId(record).map { "dead letter \($0)" }
            status = record.status.rawValue
            answer = String((record.answer ?? "").prefix(400))
        }
    }

    /// Days of the audit log the audit page shows.
    static let auditDays = 30

    func recentActions(days: Int, limit: Int) async throws -> [ActionRow] {
        let since = WallClock.milliseconds() - Int64(days) * 86_400_000
        return try await onStore { [store] in
            try store.roles().supportActions(since: since, limit: 100_000).suffix(limit).reversed().map(ActionRow.init)
        }
    }

    func home(_ session: ConsoleSessions.Session) async -> Response {
        struct Values {
            var query = ""
            var actions: [ActionRow]
        }
        do {
            return html(.ok, "home", title: "Search", session: session, Values(actions: try await recentActions(days: 7, limit: 20)))
        } catch {
            return storeFailure(error, session)
        }
    }

    func audit(_ session: ConsoleSessions.Session) async -> Response {
        struct Values {
            var days: Int
            var actions: [ActionRow]
        }
        do {
            let actions = try await recentActions(days: Self.auditDays, limit: 1_000)
            return html(.ok, "audit", title: "Audit log", session: session, Values(days: Self.auditDays, actions: actions))
        } catch {
            return storeFailure(error, session)
        }
    }

    func storeFailure(_ error: any Error, _ session: ConsoleSessions.Session?) -> Response {
        logger.error("console: the state store failed: \(error)")
        return failure(.serviceUnavailable, "Store unavailable", "The state store could not be read: \(error)", session: session)
    }

    // MARK: search

    struct Match {
        var originalTransactionId: String
        var productId: String
        var via: String
    }

    struct Results {
        var query: String
        var message: String?
        var tone: String
        var matches: [Match]
        /// Stored, not computed: the templates read values through Mirror, which sees stored properties only.
        var hasMatches: Bool

        init(query: String, message: String?, tone: String = "error", matches: [Match] = []) {
            self.query = query
            self.message = message
            self.tone = tone
            self.matches = matches
            hasMatches = !matches.isEmpty
        }
    }

    /// How long a search waits for Apple: a page must answer, and the client retries for longer.
    static let appleLookupDeadline = Duration.seconds(15)

    /// Finds the customer `text` names: in the store first (originalTransactionId,
    /// appAccountToken, appTransactionId), then at Apple: an order id through Look Up Order ID, a
    /// transaction id through Get Transaction Info. One purchase found: its page.
    func search(_ text: String, _ session: ConsoleSessions.Session) async -> Response {
        let query = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !query.isEmpty, query.utf8.count <= 256 else {
            return html(.ok, "results", title: "Search", session: session, Results(query: String(query.prefix(256)), message: "Enter an identifier."))
        }
        do {
            let known = try await onStore { [store] in try CustomerProfile.purchases(named: query, in: store.roles()) != nil }
            if known { return Self.redirect("\(ConsoleConfiguration.path)/customers/\(ConsoleForm.pathSegment(query))") }
        } catch {
            return storeFailure(error, session)
        }
        guard let apple else {
            return html(.notFound, "results", title: "Search", session: session, Results(
                query: query,
                message: "Signet's store knows no purchase by that identifier. Order ids and later transaction ids are looked up at Apple, which needs the In-App Purchase key (docs/console.md)."))
        }
        let isTransactionId = query.allSatisfy(\.isASCIIDigit)
        // Apple's order ids are letters and digits: anything else is not asked (Apple's budget is 10 a second).
        guard isTransactionId || (query.count <= 64 && query.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return html(.notFound, "results", title: "Search", session: session, Results(
                query: query,
                message: "Signet's store knows no purchase by that identifier, and it is not an order id (letters and digits) nor a transaction id (digits) to ask Apple about."))
        }
        do {
            let found = try await Self.withDeadline(Self.appleLookupDeadline) { [self] in
                try await isTransactionId ? transaction(query, apple) : order(query, apple)
            }
            if let message = found.message {
                return html(.notFound, "results", title: "Search", session: session, Results(query: query, message: message))
            }
            let matches = try await onStore { [store] in
                try found.ids.compactMap { id -> Match? in
                    guard let snapshot = try store.roles().subscription(originalTransactionId: id) else { return nil }
                    return Match(originalTransactionId: id, productId: snapshot.productId ?? "", via: found.via)
                }
            }
            if matches.count == 1, let only = matches.first {
                return Self.redirect("\(ConsoleConfiguration.path)/customers/\(ConsoleForm.pathSegment(only.originalTransactionId))")
            }
            if matches.isEmpty {
                return html(.notFound, "results", title: "Search", session: session, Results(
                    query: query,
                    message: "Apple knows \(found.via) \(query) (purchase \(found.ids.joined(separator: ", "))), but Signet's store has no record of it yet: its notifications have not arrived (a backfill or reconcile fetches them)."))
            }
            return html(.ok, "results", title: "Search", session: session, Results(
                query: query, message: "\(matches.count) purchases in \(found.via) \(query).", tone: "done", matches: matches))
        } catch let error as AppStoreAPIError {
            let explained = SupportDesk.explanation(error).map { " (\($0))" } ?? ""
            return html(.badGateway, "results", title: "Search", session: session, Results(query: query, message: "Apple: \(error)\(explained)"))
        } catch is DeadlineExceeded {
            return html(.gatewayTimeout, "results", title: "Search", session: session, Results(
                query: query, message: "Apple did not answer within \(Self.appleLookupDeadline): try again in a moment."))
        } catch let rejection as RecordRejection {
            return html(.badGateway, "results", title: "Search", session: session, Results(
                query: query, message: "Apple's answer did not verify (\(rejection.reason.rawValue)); nothing is shown from it."))
        } catch {
            return html(.badGateway, "results", title: "Search", session: session, Results(query: query, message: "Apple could not be asked: \(error)"))
        }
    }

    struct DeadlineExceeded: Error {}

    /// `body`'s answer, or ``DeadlineExceeded`` once `deadline` passed (the body is cancelled).
    static func withDeadline<T: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: deadline)
                throw DeadlineExceeded()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw DeadlineExceeded() }
            return first
        }
    }

    struct Found: Sendable {
        var ids: [String] = []
        var via: String
        var message: String?
    }

    private func order(_ orderId: String, _ apple: ConsoleAppleAccess) async throws -> Found {
        guard apple.client.reaches(.production) else {
            return Found(via: "order", message: "Not in Signet's store. Order ids are looked up in Production only, and the console's App Store key is configured for Sandbox.")
        }
        let answer = try await apple.client.lookUpOrder(orderId: orderId)
        guard answer.isValid else {
            return Found(via: "order", message: "Not in Signet's store, and Apple does not know order \(orderId) as one of this app's.")
        }
        var ids: [String] = []
        for signed in answer.signedTransactions ?? [] {
            if let id = try apple.verifier.verifyTransaction(signed).payload.originalTransactionId, !ids.contains(id) { ids.append(id) }
        }
        return Found(ids: ids, via: "order")
    }

    private func transaction(_ transactionId: String, _ apple: ConsoleAppleAccess) async throws -> Found {
        let lookup = try await apple.client.lookUpTransaction(transactionId: transactionId)
        let verified = try apple.verifier.verifyTransaction(lookup.signedTransactionInfo)
        guard let id = verified.payload.originalTransactionId else {
            return Found(via: "transaction", message: "Apple's transaction \(transactionId) names no originalTransactionId.")
        }
        return Found(ids: [id], via: "transaction")
    }

    // MARK: the customer's page

    struct Reason {
        var value: Int
        var label: String
    }

    static let reasons = [
        Reason(value: 3, label: "Service issue or outage (3)"), Reason(value: 1, label: "Customer satisfaction (1)"),
        Reason(value: 2, label: "Other (2)"), Reason(value: 0, label: "Undeclared (0)"),
    ]

    struct PurchaseValues {
        var originalTransactionId: String
        var productId: String
        var state: String
        var entitled: Bool
        var entitlements: [String]
        var why: String
        var expires: String
        var environment: String
        var appAccountToken: String
        var appTransactionId: String
        var consentRestricted: Bool
        var canAct: Bool
        var csrf: String
        var query: String
        var reasons: [Reason]
    }

    struct Moment {
        var when: String
        var kind: String
        var originalTransactionId: String
        var summary: String
    }

    struct Banner {
        var text: String
        var tone: String
    }

    struct CustomerValues {
        var query: String
        var matchedBy: String
        var banner: Banner?
        var purchases: [PurchaseValues]
        var timeline: [Moment]
        var actions: [ActionRow]
    }

    func customer(_ query: String, _ session: ConsoleSessions.Session, action: String?) async -> Response {
        do {
            let loaded = try await onStore { [store] () -> (CustomerProfile, SupportActionRecord?)? in
                let roles = try store.roles()
                guard let profile = try CustomerProfile.find(query, in: roles, now: WallClock.milliseconds()) else { return nil }
                return (profile, try action.flatMap { try roles.supportAction(requestIdentifier: $0) })
            }
            guard let (profile, highlighted) = loaded else {
                return failure(.notFound, "Not found", "Signet's store knows no purchase by \(query).", session: session)
            }
            let canAct = session.role == .operator
            let purchases = profile.purchases.map { purchase in
                PurchaseValues(
                    originalTransactionId: purchase.originalTransactionId, productId: purchase.productId ?? "(unknown product)",
                    state: purchase.state, entitled: purchase.entitled, entitlements: purchase.entitlements, why: purchase.why,
                    expires: purchase.expiresDate.map(ConsoleTime.text) ?? "—", environment: purchase.environment ?? "—",
                    appAccountToken: purchase.appAccountToken ?? "—", appTransactionId: purchase.appTransactionId ?? "—",
                    consentRestricted: purchase.consentRestricted, canAct: canAct, csrf: session.csrf, query: query, reasons: Self.reasons)
            }
            let timeline = profile.timeline.map {
                Moment(when: ConsoleTime.text($0.at), kind: $0.kind, originalTransactionId: $0.originalTransactionId ?? "", summary: $0.summary)
            }
            let values = CustomerValues(
                query: query, matchedBy: profile.matchedBy, banner: highlighted.map(Self.banner), purchases: purchases, timeline: timeline,
                actions: profile.actions.sorted { $0.at > $1.at }.map(ActionRow.init))
            return html(.ok, "customer", title: "Customer \(query)", session: session, values)
        } catch {
            return storeFailure(error, session)
        }
    }

    /// What the page says of an action just taken (the audit log's record of it).
    static func banner(_ record: SupportActionRecord) -> Banner {
        let what = ConsoleAction.describe(record)
        switch record.status {
        case .done:
            return Banner(text: "\(what): done by \(record.actor). \(ConsoleAction.followUp(record))", tone: "done")
        case .refused where record.action == "replay_dead_letter":
            return Banner(text: "\(what) by \(record.actor), and refused again: \(record.answer ?? "")", tone: "refused")
        case .failed where record.action == "replay_dead_letter":
            return Banner(text: "\(what): the webhook gave no answer; replay it again. \(record.answer ?? "")", tone: "failed")
        case .refused:
            return Banner(text: "\(what): Apple refused. \(record.answer ?? "")", tone: "refused")
        case .failed:
            return Banner(
                text: "\(what): Apple could not be reached; it may or may not have happened. Send it again from the confirmation: the same request is never done twice. \(record.answer ?? "")",
                tone: "failed")
        case .pending:
            return Banner(text: "\(what): sent to Apple, no answer recorded yet.", tone: "pending")
        }
    }
}

/// Times as the console shows them: UTC, to the second.
enum ConsoleTime {
    static func text(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
        return date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon))
            .replacingOccurrences(of: "T", with: " ") + " UTC"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

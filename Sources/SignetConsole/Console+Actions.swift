import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetState

// Acting: a confirmation page first, then the action, recorded in the audit log under the
// request identifier the confirmation carries (a form sent twice acts once).
extension Console {
    struct Fact {
        var name: String
        var value: String
    }

    struct Field {
        var name: String
        var value: String
    }

    struct Confirmation {
        var heading: String
        var warning: String
        var facts: [Fact]
        var action: String
        var csrf: String
        var fields: [Field]
        var button: String
        /// Where Cancel goes.
        var cancel: String
    }

    func act(_ action: ConsoleAction, on id: String, _ fields: [String: String], _ session: ConsoleSessions.Session) async -> Response {
        guard session.role == .operator else {
            logger.warning("console: \(session.name) (read_only) was refused \(action.logged) on \(id)")
            return failure(.forbidden, "Not allowed", "Your credential is read-only: only an operator can act.", session: session)
        }
        let requestId = SupportDesk.canonical(fields["request_id"]) ?? UUID().uuidString.lowercased()
        let back = ConsoleForm.pathSegment(fields["q"].flatMap { $0.isEmpty ? nil : $0 } ?? id)
        let done = Self.redirect("\(ConsoleConfiguration.path)/customers/\(back)?action=\(ConsoleForm.pathSegment(requestId))")
        do {
            let roles = try await onStore { [store] in try store.roles() }
            let desk = SupportDesk(store: roles, actor: session.name)
            let snapshot = try await onStore { try roles.subscription(originalTransactionId: id) }
            switch action {
            case .extend:
                return try await extend(id, snapshot, fields, requestId: requestId, desk: desk, session: session, done: done)
            case .token:
                return try await setToken(id, snapshot, fields, requestId: requestId, desk: desk, session: session, done: done)
            case .consent:
                return try await recordConsent(id, snapshot, fields, requestId: requestId, desk: desk, session: session, done: done)
            }
        } catch let notSent as SupportDesk.NotSent {
            return failure(.conflict, "Not sent", "\(notSent)", session: session)
        } catch let invalid as SupportCallError {
            return failure(.badRequest, "Not sent", "\(invalid)", session: session)
        } catch is AppStoreAPIError {
            // Recorded in the audit log (refused or failed): the customer's page says which.
            return done
        } catch {
            return storeFailure(error, session)
        }
    }

    private func confirm(
        _ action: ConsoleAction, _ id: String, heading: String, warning: String, facts: [Fact], fields: [Field], button: String,
        _ session: ConsoleSessions.Session, back: String
    ) -> Response {
        html(.ok, "confirm", title: heading, session: session, Confirmation(
            heading: heading, warning: warning, facts: facts,
            action: "\(ConsoleConfiguration.path)/customers/\(ConsoleForm.pathSegment(id))/\(action.rawValue)", csrf: session.csrf,
            fields: fields, button: button, cancel: "\(ConsoleConfiguration.path)/customers/\(back)"))
    }

    /// The store to ask for a purchase: the one Signet recorded it in, when the client reaches it.
    private func environment(_ snapshot: SubscriptionSnapshot?, _ client: AppStoreServerAPIClient) -> AppStoreEnvironment {
        let recorded = snapshot?.environment.map(AppStoreEnvironment.init(rawValue:))
        return recorded.flatMap { client.reaches($0) ? $0 : nil } ?? client.configuration.environment
    }

    private func needApple(_ session: ConsoleSessions.Session) -> Response {
        failure(
            .serviceUnavailable, "Apple not configured",
            "Acting through Apple needs the In-App Purchase key (SIGNET_APPSTORE_KEY_ID, SIGNET_APPSTORE_ISSUER_ID, SIGNET_APPSTORE_PRIVATE_KEY) in signet run's environment.",
            session: session)
    }

    private func extend(
        _ id: String, _ snapshot: SubscriptionSnapshot?, _ fields: [String: String], requestId: String, desk: SupportDesk,
        session: ConsoleSessions.Session, done: Response
    ) async throws -> Response {
        guard let days = fields["days"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }),
            let code = fields["reason"].flatMap(Int.init).flatMap(ExtendReasonCode.init(rawValue:))
        else {
            return failure(.badRequest, "Not sent", "Give the days (1 to 90) and one of Apple's reasons.", session: session)
        }
        let request = try ExtendRenewalDateRequest(extendByDays: days, extendReasonCode: code, requestIdentifier: requestId).validated()
        let record = SupportActionRecord(
            requestIdentifier: requestId, actor: session.name, action: ConsoleAction.extend.logged, originalTransactionId: id,
            parameters: try ConsumptionRecordCoding.encode(request), at: WallClock.milliseconds())
        if let kept = try await onStore({ try desk.previous(record) }), kept.status == .done { return done }
        if let why = try await onStore({ try desk.extensionRefusal(snapshot, originalTransactionId: id, now: record.at, besides: requestId) }) {
            return failure(.conflict, "Not sent", "\(why). Apple would refuse it; nothing was sent.", session: session)
        }
        guard let apple else { return needApple(session) }
        guard fields["confirm"] == "yes" else {
            return confirm(
                .extend, id, heading: "Extend the renewal date?",
                warning: "Irreversible: Apple moves the renewal date, emails the customer, and counts it toward two extensions within 365 days.",
                facts: [
                    Fact(name: "Purchase", value: id), Fact(name: "Product", value: snapshot?.productId ?? "not in Signet's store"),
                    Fact(name: "Renews or expires", value: snapshot?.periodEnd.map(ConsoleTime.text) ?? "—"),
                    Fact(name: "Extend by", value: "\(days) days"),
                    Fact(name: "Reason", value: Self.reasons.first { $0.value == code.rawValue }?.label ?? "\(code.rawValue)"),
                    Fact(name: "Request identifier", value: requestId),
                ],
                fields: [
                    Field(name: "days", value: "\(days)"), Field(name: "reason", value: "\(code.rawValue)"),
                    Field(name: "request_id", value: requestId), Field(name: "q", value: fields["q"] ?? id),
                ],
                button: "Extend by \(days) days", session, back: ConsoleForm.pathSegment(fields["q"] ?? id))
        }
        if case .done = try await onStore({ try desk.begin(record) }) { return done }
        let store = environment(snapshot, apple.client)
        logger.info("console: \(session.name) extends \(id) by \(days) days (request \(requestId))")
        _ = try await desk.finish(record, {
            try await apple.client.extendRenewalDate(originalTransactionId: id, request, in: store)
        }, succeeded: \.success)
        return done
    }

    private func setToken(
        _ id: String, _ snapshot: SubscriptionSnapshot?, _ fields: [String: String], requestId: String, desk: SupportDesk,
        session: ConsoleSessions.Session, done: Response
    ) async throws -> Response {
        guard let token = fields["token"].flatMap({ AppAccountToken($0.trimmingCharacters(in: .whitespaces)) }) else {
            return failure(.badRequest, "Not sent", "The app account token must be a UUID (Apple refuses anything else).", session: session)
        }
        struct Done: Codable { var appAccountToken: String }
        let record = SupportActionRecord(
            requestIdentifier: requestId, actor: session.name, action: ConsoleAction.token.logged, originalTransactionId: id,
            parameters: try ConsumptionRecordCoding.encode(Done(appAccountToken: token.description)), at: WallClock.milliseconds())
        if let kept = try await onStore({ try desk.previous(record) }), kept.status == .done { return done }
        guard let apple else { return needApple(session) }
        guard fields["confirm"] == "yes" else {
            return confirm(
                .token, id, heading: "Set the app account token?",
                warning: "Apple puts the token on the purchase's current and later transactions, not on past ones.",
                facts: [
                    Fact(name: "Purchase", value: id), Fact(name: "Product", value: snapshot?.productId ?? "not in Signet's store"),
                    Fact(name: "Current token", value: snapshot?.appAccountToken?.description ?? "none"),
                    Fact(name: "New token", value: token.description), Fact(name: "Request identifier", value: requestId),
                ],
                fields: [
                    Field(name: "token", value: token.description), Field(name: "request_id", value: requestId),
                    Field(name: "q", value: fields["q"] ?? id),
                ],
                button: "Set the token", session, back: ConsoleForm.pathSegment(fields["q"] ?? id))
        }
        if case .done = try await onStore({ try desk.begin(record) }) { return done }
        let store = environment(snapshot, apple.client)
        logger.info("console: \(session.name) sets the app account token of \(id) (request \(requestId))")
        _ = try await desk.finish(record) {
            try await apple.client.setAppAccountToken(originalTransactionId: id, token, in: store)
            return Done(appAccountToken: token.description)
        }
        return done
    }

    private func recordConsent(
        _ id: String, _ snapshot: SubscriptionSnapshot?, _ fields: [String: String], requestId: String, desk: SupportDesk,
        session: ConsoleSessions.Session, done: Response
    ) async throws -> Response {
        guard let appTransactionId = snapshot?.appTransactionId else {
            return failure(.conflict, "Not recorded", "Signet knows no app download (appTransactionId) for purchase \(id).", session: session)
        }
        struct Asked: Codable { var appTransactionId: String }
        let record = SupportActionRecord(
            requestIdentifier: requestId, actor: session.name, action: ConsoleAction.consent.logged, originalTransactionId: id,
            parameters: try ConsumptionRecordCoding.encode(Asked(appTransactionId: appTransactionId)), at: WallClock.milliseconds())
        if let kept = try await onStore({ try desk.previous(record) }), kept.status == .done { return done }
        let restriction = try await onStore { [store] in try store.roles().consentRestriction(appTransactionId: appTransactionId) }
        guard let restriction, restriction.isInForce else {
            return failure(.conflict, "Not recorded", "The customer has no consent withdrawal in force for \(appTransactionId).", session: session)
        }
        guard fields["confirm"] == "yes" else {
            return confirm(
                .consent, id, heading: "Record consent again?",
                warning: "Only when the customer gave consent again: Signet will answer Apple's refund questions and retention requests for them again.",
                facts: [
                    Fact(name: "Purchase", value: id), Fact(name: "App download", value: appTransactionId),
                    Fact(name: "Withdrawn", value: ConsoleTime.text(restriction.rescindedAt)), Fact(name: "Request identifier", value: requestId),
                ],
                fields: [Field(name: "request_id", value: requestId), Field(name: "q", value: fields["q"] ?? id)],
                button: "Record consent", session, back: ConsoleForm.pathSegment(fields["q"] ?? id))
        }
        let name = session.name
        try await onStore { [store] in
            _ = try store.roles().clearConsentRestriction(appTransactionId: appTransactionId, by: name, at: WallClock.milliseconds())
            try desk.recordDone(record, answer: #"{"consent":"recorded"}"#)
        }
        logger.info("console: \(session.name) recorded consent again for \(appTransactionId) (purchase \(id))")
        return done
    }
}

import AppStoreModels
import Foundation

/// A customer as the support desk sees them: the purchases an identifier names, each with its
/// state, entitlement names, expiry and "why" (``AccessExplanation``), and one timeline, newest
/// first, merging the entitlement events, refund questions and their outcomes, retention
/// answers, consent and operator actions (docs/support.md).
package struct CustomerProfile: Encodable, Sendable {
    /// One purchase.
    package struct Purchase: Encodable, Sendable {
        package var originalTransactionId: String
        package var productId: String?
        package var productType: String?
        package var environment: String?
        package var state: String
        package var entitled: Bool
        package var entitlements: [String]
        package var expiresDate: Int64?
        package var appAccountToken: String?
        package var appTransactionId: String?
        /// Whether the customer withdrew consent for the app download and it is still in force.
        package var consentRestricted: Bool
        package var why: String
    }

    /// One thing that happened to the customer's purchases.
    package struct Moment: Encodable, Sendable, Hashable {
        /// When (ms since 1970): Apple's signedDate where Apple signed it, else when Signet recorded it.
        package var at: Int64
        /// `event`, `refund_question`, `refund_outcome`, `retention_answer`, `retention_outcome`,
        /// `consent_withdrawn`, `consent_restored`, `operator_action`, `migration`.
        package var kind: String
        package var originalTransactionId: String?
        /// One line saying what happened.
        package var summary: String
    }

    /// What was searched for, and what it matched as (`originalTransactionId`, `appAccountToken`, `appTransactionId`).
    package var query: String
    package var matchedBy: String
    package var purchases: [Purchase]
    package var timeline: [Moment]
    /// The operator actions on the purchases, as the audit log keeps them, oldest first per
    /// purchase (read once for the timeline; the console shows them whole). Not in the JSON:
    /// the timeline says them.
    package var actions: [SupportActionRecord]

    private enum CodingKeys: String, CodingKey {
        case query, matchedBy, purchases, timeline
    }

    /// Entries of the timeline kept at most (the newest).
    package static let timelineLimit = 500

    /// The profile of the customer `query` names (an originalTransactionId, an appAccountToken
    /// in any case, or an appTransactionId), as of `now`; nil when the store knows none of it.
    package static func find(_ query: String, in store: any StoreRoles, now: Int64) throws -> CustomerProfile? {
        let trimmed = query.trimmingCharacters(in: .whitespaces)
        guard let (snapshots, matchedBy) = try purchases(named: trimmed, in: store) else { return nil }
        return try CustomerProfile(query: trimmed, matchedBy: matchedBy, snapshots: snapshots, store: store, now: now)
    }

    /// The purchases `query` names and what it matched as, without the rest of the profile
    /// (a search asks only whether there is one); nil when the store knows none.
    package static func purchases(named query: String, in store: any StoreRoles) throws -> ([SubscriptionSnapshot], matchedBy: String)? {
        guard !query.isEmpty else { return nil }
        if let snapshot = try store.subscription(originalTransactionId: query) {
            return ([snapshot], "originalTransactionId")
        }
        if let token = AppAccountToken(query) {
            let snapshots = try store.subscriptions(appAccountToken: token).sorted { $0.originalTransactionId < $1.originalTransactionId }
            return snapshots.isEmpty ? nil : (snapshots, "appAccountToken")
        }
        let snapshots = try store.subscriptions(appTransactionId: query)
        return snapshots.isEmpty ? nil : (snapshots, "appTransactionId")
    }

    private init(query: String, matchedBy: String, snapshots: [SubscriptionSnapshot], store: any StoreRoles, now: Int64) throws {
        self.query = query
        self.matchedBy = matchedBy
        var purchases: [Purchase] = []
        var timeline: [Moment] = []
        var kept: [SupportActionRecord] = []
        let names = store.entitlementNames
        for snapshot in snapshots {
            let id = snapshot.originalTransactionId
            let restriction = try snapshot.appTransactionId.map { try store.consentRestriction(appTransactionId: $0) } ?? nil
            let actions = try store.supportActions(originalTransactionId: id)
            kept += actions
            purchases.append(Purchase(
                originalTransactionId: id, productId: snapshot.productId, productType: snapshot.productType, environment: snapshot.environment,
                state: snapshot.state.rawValue, entitled: snapshot.entitled,
                entitlements: names.names(productId: snapshot.productId, subscriptionGroupId: snapshot.subscriptionGroupIdentifier),
                expiresDate: snapshot.periodEnd, appAccountToken: snapshot.appAccountToken?.description, appTransactionId: snapshot.appTransactionId,
                consentRestricted: restriction?.isInForce ?? false,
                why: AccessExplanation.sentence(
                    for: snapshot, restriction: restriction, pendingExtension: Self.pendingExtension(actions), now: now)))
            timeline += try Self.events(of: id, in: store)
            timeline += try Self.refundQuestions(of: id, in: store)
            timeline += try Self.retentionAnswers(of: id, in: store)
            timeline += actions.map { action in
                Moment(
                    at: action.at, kind: "operator_action", originalTransactionId: id,
                    summary: "\(action.actor): \(action.action) (\(action.status.rawValue))")
            }
            if let restriction {
                timeline.append(Moment(at: restriction.rescindedAt, kind: "consent_withdrawn", originalTransactionId: id, summary: "RESCIND_CONSENT"))
                if let cleared = restriction.clearedAt {
                    timeline.append(Moment(
                        at: cleared, kind: "consent_restored", originalTransactionId: id,
                        summary: "consent recorded again\(restriction.clearedBy.map { " by \($0)" } ?? "")"))
                }
            }
            if let previous = snapshot.previousOriginalTransactionId, let at = snapshot.purchaseDate {
                timeline.append(Moment(at: at, kind: "migration", originalTransactionId: id, summary: "migrated from \(previous)"))
            }
        }
        self.purchases = purchases
        actions = kept
        self.timeline = Array(timeline.sorted { ($0.at, $0.kind) > ($1.at, $1.kind) }.prefix(Self.timelineLimit))
    }

    /// The new expiry of the latest extension Apple granted (from the audit log), if any.
    private static func pendingExtension(_ actions: [SupportActionRecord]) -> Int64? {
        struct Answer: Decodable { var effectiveDate: Int64? }
        return actions.filter { $0.action == "extend" && $0.status == .done }.compactMap { action in
            action.answer.flatMap { try? ConsumptionRecordCoding.decode(Answer.self, from: $0).effectiveDate }
        }.max()
    }

    private static func events(of id: String, in store: any StoreRoles) throws -> [Moment] {
        struct Event: Decodable {
            var type: String
            var state: String?
            var notificationType: String?
            var subtype: String?
            var signedDate: Int64?
        }
        return try store.eventHistory(originalTransactionId: id, limit: timelineLimit).compactMap { entry in
            guard let event = try? JSONDecoder().decode(Event.self, from: Data(entry.payload)) else { return nil }
            let cause = event.notificationType.map { " after \($0)\(event.subtype.map { " \($0)" } ?? "")" } ?? ""
            return Moment(
                at: event.signedDate ?? entry.createdAt, kind: "event", originalTransactionId: id,
                summary: "\(event.type)\(event.state.map { ": \($0)" } ?? "")\(cause)")
        }
    }

    private static func refundQuestions(of id: String, in store: any StoreRoles) throws -> [Moment] {
        try store.consumptionRequests(originalTransactionId: id, limit: timelineLimit).flatMap { request in
            var moments = [Moment(
                at: request.requestedAt, kind: "refund_question", originalTransactionId: id,
                summary: "CONSUMPTION_REQUEST\(request.reason.map { " (\($0))" } ?? "") for \(request.transactionId): \(request.status.rawValue)")]
            if let outcome = request.outcome, let at = request.outcomeAt {
                moments.append(Moment(at: at, kind: "refund_outcome", originalTransactionId: id, summary: outcome.rawValue))
            }
            return moments
        }
    }

    private static func retentionAnswers(of id: String, in store: any StoreRoles) throws -> [Moment] {
        try store.retentionOffers(originalTransactionId: id, answeredSince: 0).flatMap { answer in
            var moments = [Moment(
                at: answer.answeredAt, kind: "retention_answer", originalTransactionId: id,
                summary: "\(answer.kind) (\(answer.rule.map { "rule \($0)" } ?? "default: \(answer.reason)"))")]
            if let outcome = answer.outcome {
                moments.append(Moment(
                    at: outcome.signedAt, kind: "retention_outcome", originalTransactionId: id,
                    summary: "\(outcome.kept ? "kept" : "lost") after \(outcome.notificationType)"))
            }
            return moments
        }
    }
}

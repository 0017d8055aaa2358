import AppStoreModels
import Foundation
package import SignetAppStoreAPI
package import SignetState

/// The support desk's actions on a customer's purchases, shared by `signet support` and the
/// console: each is recorded in the audit log before Apple is asked and finished with Apple's
/// answer, keyed by its request identifier, so the same identifier never acts twice
/// (docs/support.md, docs/console.md).
package struct SupportDesk: Sendable {
    /// Where the audit log and the purchases are read and written.
    package let store: any StoreRoles
    /// Who acts: the operator's name, or the console credential's.
    package let actor: String

    package init(store: any StoreRoles, actor: String) {
        self.store = store
        self.actor = actor
    }

    /// An action that was not sent: the reason says why, in an operator's words.
    package struct NotSent: Error, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    /// What happened before under a record's identifier.
    package enum Start: Sendable {
        /// New, or never answered by Apple: ask Apple (again, with the same identifier).
        case ask
        /// Apple did it already: the recorded answer stands.
        case done(SupportActionRecord)
    }

    /// An identifier as the log keys it: a UUID lower-case (one action however it is spelled), other text as given.
    package static func canonical(_ identifier: String?) -> String? {
        guard let identifier, !identifier.isEmpty else { return nil }
        return UUID(uuidString: identifier)?.uuidString.lowercased() ?? identifier
    }

    /// The action kept under `record`'s identifier, if any; throws ``NotSent`` when it is another action.
    package func previous(_ record: SupportActionRecord) throws -> SupportActionRecord? {
        guard let kept = try store.supportAction(requestIdentifier: record.requestIdentifier) else { return nil }
        try Self.same(kept, record)
        return kept
    }

    /// Records `record` (or finds the one kept under its identifier) before Apple is asked.
    package func begin(_ record: SupportActionRecord) throws -> Start {
        let kept = try store.beginSupportAction(record)
        try Self.same(kept, record)
        return kept.status == .done ? .done(kept) : .ask
    }

    private static func same(_ kept: SupportActionRecord, _ record: SupportActionRecord) throws {
        // An action on neither a purchase nor a product (a dead letter's replay) is told apart by what it names.
        let subjectless = record.originalTransactionId == nil && record.productId == nil
        guard kept.action == record.action, kept.originalTransactionId == record.originalTransactionId, kept.productId == record.productId,
            !subjectless || kept.parameters == record.parameters
        else {
            throw NotSent(
                "request identifier \(record.requestIdentifier) names another action in the audit log (\(kept.action) by \(kept.actor)); use a new one")
        }
    }

    /// Runs `call` (Apple) for the recorded action and records its answer: done, refused (Apple
    /// said no) or failed (Apple not reached; it may have happened: run it again with the same identifier).
    package func finish<Answer: Encodable>(
        _ record: SupportActionRecord, _ call: () async throws -> Answer, succeeded: (Answer) -> Bool = { _ in true }
    ) async throws -> Answer {
        var finished = record
        do {
            let answer = try await call()
            finished.status = succeeded(answer) ? .done : .refused
            finished.answer = try ConsumptionRecordCoding.encode(answer)
            finished.answeredAt = WallClock.milliseconds()
            try store.finishSupportAction(finished)
            return answer
        } catch {
            finished.status = (error as? AppStoreAPIError)?.kind == .permanent ? .refused : .failed
            finished.answer = "\(error)"
            finished.answeredAt = WallClock.milliseconds()
            try? store.finishSupportAction(finished)
            throw error
        }
    }

    /// Records an action Signet does itself (no call to Apple), finished at once: done, or
    /// refused (a replayed dead letter refused again).
    package func recordDone(_ record: SupportActionRecord, answer: String, status: SupportActionRecord.Status = .done) throws {
        _ = try store.beginSupportAction(record)
        var finished = record
        finished.status = status
        finished.answer = answer
        finished.answeredAt = WallClock.milliseconds()
        try store.finishSupportAction(finished)
    }

    /// The purchase's extensions Apple granted within 365 days of `now`, `requestIdentifier`'s apart.
    package func extensionsWithinAYear(of originalTransactionId: String, now: Int64, besides requestIdentifier: String) throws
        -> [SupportActionRecord]
    {
        try store.supportActions(originalTransactionId: originalTransactionId).filter {
            $0.action == "extend" && $0.status == .done && $0.requestIdentifier != requestIdentifier && now - $0.at < 365 * 86_400_000
        }
    }

    /// Why Apple would refuse to extend the purchase, as far as Signet knows (its state, and
    /// Apple's "twice within 365 days" counted from the audit log); nil: send. A purchase the
    /// store does not know is sent, and Apple decides.
    package func extensionRefusal(_ snapshot: SubscriptionSnapshot?, originalTransactionId: String, now: Int64, besides requestIdentifier: String)
        throws -> String?
    {
        if let snapshot, let why = Self.extensionRefusal(snapshot, now: now) { return why }
        let earlier = try extensionsWithinAYear(of: originalTransactionId, now: now, besides: requestIdentifier)
        guard earlier.count >= 2 else { return nil }
        return "purchase \(originalTransactionId) was extended twice within 365 days (\(earlier.map(\.requestIdentifier).joined(separator: ", ")) in the audit log); Apple allows two"
    }

    /// Why Apple would refuse to extend `snapshot`, from its state alone; nil: send.
    package static func extensionRefusal(_ snapshot: SubscriptionSnapshot, now: Int64) -> String? {
        if snapshot.productType != TransactionType.autoRenewableSubscription.rawValue {
            return "purchase \(snapshot.originalTransactionId) is not an auto-renewable subscription (\(snapshot.productType ?? "type unknown")); Apple extends only those"
        }
        if snapshot.ownership == InAppOwnershipType.familyShared.rawValue {
            return "purchase \(snapshot.originalTransactionId) is a family member's copy; Apple extends only the purchaser's (FamilySharedSubscriptionExtensionIneligibleError)"
        }
        switch snapshot.state {
        case .active:
            return nil
        case .gracePeriod:
            // Apple: a grace period whose expiration date is in the past is ineligible.
            if let end = snapshot.expiresDate, end <= now {
                return "purchase \(snapshot.originalTransactionId) is in a grace period past its expiration date; Apple extends only active subscriptions"
            }
            return nil
        default:
            return "purchase \(snapshot.originalTransactionId) is \(snapshot.state.rawValue), not active; Apple extends only active subscriptions (SubscriptionExtensionIneligibleError)"
        }
    }

    /// What Apple's support error codes mean, for the ones an operator meets.
    package static func explanation(_ error: AppStoreAPIError) -> String? {
        switch error.errorCode {
        case AppStoreAPIErrorCode.subscriptionExtensionIneligible?:
            "Apple extends only active auto-renewable subscriptions with a paid period behind them: not in a free offer period, billing retry, an expired grace period, nor after two extensions within 365 days"
        case AppStoreAPIErrorCode.subscriptionMaxExtension?: "the subscription has had as many extensions as Apple allows (two within 365 days)"
        case AppStoreAPIErrorCode.familySharedSubscriptionExtensionIneligible?:
            "a family member's subscription: extend the purchaser's (the family-shareable original purchase) instead"
        case AppStoreAPIErrorCode.originalTransactionIdNotFound?, AppStoreAPIErrorCode.transactionIdNotFound?:
            "Apple does not know that id in this environment (SIGNET_ENVIRONMENT); TestFlight and App Review purchases are in Sandbox"
        case AppStoreAPIErrorCode.transactionIdIsNotOriginalTransactionId?:
            "give the purchase's originalTransactionId (`signet state show` or `signet support order` print it)"
        case AppStoreAPIErrorCode.familyTransactionNotSupported?: "family-shared purchases have no app account token of their own"
        case AppStoreAPIErrorCode.appTransactionIdNotSupported?: "that is an appTransactionId: give the purchase's originalTransactionId"
        case AppStoreAPIErrorCode.statusRequestNotFound?: "no mass extension with that product and request identifier: check both"
        case AppStoreAPIErrorCode.appTransactionDoesNotExist?: "the customer has no app transaction for this app"
        default: nil
        }
    }
}

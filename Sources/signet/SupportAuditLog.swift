import AppStoreModels
import ArgumentParser
import Foundation
import SignetAppStoreAPI
import SignetCore
import SignetState

/// The audit log side of `signet support`'s actions: each is recorded before Apple is asked
/// and finished with Apple's answer, keyed by its request identifier, so running it again
/// with the same identifier never acts twice (docs/support.md).
struct SupportAuditLog {
    let store: any StoreRoles
    let actor: String
    let location: String

    /// The state store opened for writing beside a running pipeline (created when there is none,
    /// as `signet consent` does); the action is refused when it cannot be recorded.
    static func open(_ options: StoreOptions, actor: String?, command: String) throws -> SupportAuditLog {
        do {
            return SupportAuditLog(
                store: try options.open(writingBesideThePipeline: true), actor: Self.actor(actor), location: options.location)
        } catch {
            throw ConfigurationFailure(
                description: "signet support \(command): not sent: the action cannot be recorded in the audit log at \(options.location): \(error)")
        }
    }

    /// Who acts: --operator, else SIGNET_OPERATOR, else the login name.
    static func actor(_ given: String?) -> String {
        let env = Terminal.environment
        for candidate in [given, env["SIGNET_OPERATOR"], env["USER"], env["LOGNAME"], ProcessInfo.processInfo.userName] {
            if let name = candidate?.trimmingCharacters(in: .whitespaces), !name.isEmpty { return name }
        }
        return "operator"
    }

    /// What happened before under `record`'s identifier.
    enum Start {
        /// New, or never answered by Apple: ask Apple (again, with the same identifier).
        case ask(SupportActionRecord)
        /// Apple did it already: the recorded answer stands.
        case done(SupportActionRecord)
    }

    /// An identifier as the log keys it: a UUID lower-case (one action however it is spelled), other text as given.
    static func canonical(_ identifier: String?) -> String? {
        guard let identifier, !identifier.isEmpty else { return nil }
        return UUID(uuidString: identifier)?.uuidString.lowercased() ?? identifier
    }

    /// The action kept under `record`'s identifier, if any; throws when it is another action.
    func previous(_ record: SupportActionRecord, command: String) throws -> SupportActionRecord? {
        guard let kept = try store.supportAction(requestIdentifier: record.requestIdentifier) else { return nil }
        try Self.same(kept, record, command: command)
        return kept
    }

    /// Records `record` (or finds the one kept under its identifier) before Apple is asked.
    func begin(_ record: SupportActionRecord, command: String) throws -> Start {
        let kept = try store.beginSupportAction(record)
        try Self.same(kept, record, command: command)
        return kept.status == .done ? .done(kept) : .ask(kept)
    }

    private static func same(_ kept: SupportActionRecord, _ record: SupportActionRecord, command: String) throws {
        guard kept.action == record.action, kept.originalTransactionId == record.originalTransactionId,
            kept.productId == record.productId
        else {
            throw ConfigurationFailure(
                description: "signet support \(command): not sent: request identifier \(record.requestIdentifier) names another action in the audit log (\(kept.action) by \(kept.actor)); use a new one")
        }
    }

    /// Runs `call` (Apple) for the recorded action and records its answer: done, refused (Apple
    /// said no) or failed (Apple not reached; it may have happened: run it again with the same identifier).
    func finish<Answer: Encodable>(_ record: SupportActionRecord, _ call: () async throws -> Answer, succeeded: (Answer) -> Bool = { _ in true })
        async throws -> Answer
    {
        var finished = record
        do {
            let answer = try await call()
            finished.status = succeeded(answer) ? .done : .refused
            finished.answer = try ConsumptionRecordCoding.encode(answer)
            finished.answeredAt = WallClock.milliseconds()
            try store.finishSupportAction(finished)
            return answer
        } catch let error as AppStoreAPIError {
            finished.status = error.kind == .permanent ? .refused : .failed
            finished.answer = "\(error)"
            finished.answeredAt = WallClock.milliseconds()
            try? store.finishSupportAction(finished)
            throw error
        } catch {
            finished.status = .failed
            finished.answer = "\(error)"
            finished.answeredAt = WallClock.milliseconds()
            try? store.finishSupportAction(finished)
            throw error
        }
    }

    /// The purchase's extensions Apple granted within 365 days of `now`, this one apart.
    func extensionsWithinAYear(of originalTransactionId: String, now: Int64, besides requestIdentifier: String) throws -> [SupportActionRecord] {
        try store.supportActions(originalTransactionId: originalTransactionId).filter {
            $0.action == "extend" && $0.status == .done && $0.requestIdentifier != requestIdentifier && now - $0.at < 365 * 86_400_000
        }
    }

    func close() { try? store.close() }
}

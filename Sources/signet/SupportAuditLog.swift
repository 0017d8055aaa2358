import Foundation
import SignetAppStorePipeline
import SignetCore
import SignetState

/// `signet support`'s side of the audit log: the store opened for writing and the acting
/// operator; the recording itself is ``SupportDesk``'s, shared with the console
/// (docs/support.md). A ``SupportDesk/NotSent`` becomes exit 2, "not sent".
struct SupportAuditLog {
    let desk: SupportDesk
    let command: String

    var actor: String { desk.actor }

    /// The state store opened for writing beside a running pipeline (created when there is none,
    /// as `signet consent` does); the action is refused when it cannot be recorded.
    static func open(_ options: StoreOptions, actor: String?, command: String) throws -> SupportAuditLog {
        do {
            let store = try options.open(writingBesideThePipeline: true)
            return SupportAuditLog(desk: SupportDesk(store: store, actor: Self.actor(actor)), command: command)
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

    /// `body` with the desk's refusals said as this command's "not sent" (exit 2).
    func notSent<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let refused as SupportDesk.NotSent {
            throw ConfigurationFailure(description: "signet support \(command): not sent: \(refused)")
        }
    }

    func previous(_ record: SupportActionRecord) throws -> SupportActionRecord? { try notSent { try desk.previous(record) } }
    func begin(_ record: SupportActionRecord) throws -> SupportDesk.Start { try notSent { try desk.begin(record) } }

    func close() { try? desk.store.close() }
}

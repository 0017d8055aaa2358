import Foundation
import SignetAppStoreAPI
import SignetState

/// The actions an operator takes on a purchase from its page, each posted to
/// `/console/customers/{originalTransactionId}/{rawValue}`, confirmed on a second page, and
/// recorded in the audit log.
enum ConsoleAction: String, CaseIterable, Sendable {
    /// Extend a Subscription Renewal Date.
    case extend
    /// Set App Account Token.
    case token
    /// Record that a customer who withdrew consent gave it again (Signet only, Apple is not asked).
    case consent

    /// The audit log's name of the action.
    var logged: String {
        switch self {
        case .extend: "extend"
        case .token: "set_token"
        case .consent: "record_consent"
        }
    }

    /// One line naming what a recorded action did.
    static func describe(_ record: SupportActionRecord) -> String {
        let purchase = record.originalTransactionId.map { " of \($0)" } ?? ""
        switch record.action {
        case "extend":
            struct Asked: Decodable { var extendByDays: Int }
            let days = (try? ConsumptionRecordCoding.decode(Asked.self, from: record.parameters).extendByDays).map { " by \($0) days" } ?? ""
            return "Renewal date\(purchase) extended\(days)"
        case "set_token": return "App account token\(purchase) set"
        case "record_consent": return "Consent\(purchase) recorded again"
        case "replay_dead_letter":
            return "Dead letter\(deadLetterId(record).map { " \($0)" } ?? "") replayed"
        default: return "\(record.action)\(purchase)"
        }
    }

    /// The dead letter a replay names (its parameters' `deadLetterId`); nil for other actions.
    static func deadLetterId(_ record: SupportActionRecord) -> String? {
        guard record.action == "replay_dead_letter" else { return nil }
        struct Asked: Decodable { var deadLetterId: String }
        return try? ConsumptionRecordCoding.decode(Asked.self, from: record.parameters).deadLetterId
    }

    /// What follows a done action.
    static func followUp(_ record: SupportActionRecord) -> String {
        switch record.action {
        case "extend":
            struct Answer: Decodable { var effectiveDate: Int64? }
            let date = record.answer.flatMap { try? ConsumptionRecordCoding.decode(Answer.self, from: $0).effectiveDate }
            return "New renewal date \(date.map(ConsoleTime.text) ?? "as Apple answered"). Pending: Apple sends RENEWAL_EXTENDED, and access updates when it arrives."
        case "replay_dead_letter":
            return "The webhook answered: \(record.answer ?? "nothing")."
        case "set_token":
            return "Apple puts it on the purchase's current and later transactions; Signet's state takes it from the next notification."
        default:
            return ""
        }
    }
}

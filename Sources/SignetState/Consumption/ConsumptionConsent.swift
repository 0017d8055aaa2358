package import AppStoreModels

/// One entry of the consent ledger: whether a customer agreed that the app shares
/// consumption data with Apple when they ask for a refund, recorded by the app's backend
/// (the entitlement API) or an operator (`signet consumption consent`).
///
/// Apple: "If the customer provided consent, respond by calling this API ... If not, don't
/// respond." Signet cannot ask the customer; the app can, and tells Signet here. An entry is
/// kept per customer account (`appAccountToken`) or per purchase (`originalTransactionId`);
/// a withdrawal replaces the consent and is kept (when, by whom). docs/consumption.md.
package struct ConsumptionConsent: Sendable, Hashable, Codable {
    /// Whom an entry is about.
    package enum Subject: Sendable, Hashable {
        /// Every purchase made with this appAccountToken (the app's account id).
        case appAccountToken(AppAccountToken)
        /// One purchase and its renewals.
        case originalTransactionId(String)

        /// The ledger's key: `appAccountToken:<token>` or `originalTransactionId:<id>`.
        package var key: String {
            switch self {
            case .appAccountToken(let token): "appAccountToken:" + token.description
            case .originalTransactionId(let id): "originalTransactionId:" + id
            }
        }
    }

    package var appAccountToken: AppAccountToken?
    package var originalTransactionId: String?
    /// True: consented; false: withdrawn (or refused).
    package var consented: Bool
    /// When it was recorded (ms since 1970).
    package var at: Int64
    /// Who recorded it: `api: <name>`, `cli: <name>`.
    package var by: String
    /// The customer's own refund preference (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`), which
    /// wins over the pipeline's policy; nil: the policy decides.
    package var refundPreference: String?

    package init(_ subject: Subject, consented: Bool, at: Int64, by: String, refundPreference: String? = nil) {
        switch subject {
        case .appAccountToken(let token): appAccountToken = token
        case .originalTransactionId(let id): originalTransactionId = id
        }
        self.consented = consented
        self.at = at
        self.by = by
        self.refundPreference = refundPreference
    }

    /// Whom this entry is about (an entry decoded from elsewhere with neither id: an empty
    /// originalTransactionId, which no purchase has).
    package var subject: Subject {
        if let originalTransactionId { return .originalTransactionId(originalTransactionId) }
        if let appAccountToken { return .appAccountToken(appAccountToken) }
        return .originalTransactionId("")
    }

    /// The refund preferences a customer override may name: Apple's `refundPreference` values.
    package static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    /// The entry that decides for a purchase, of those kept for its purchase and its account:
    /// the newest; at the same instant a withdrawal wins. Nil: nothing known, so no consent.
    package static func deciding(_ entries: [ConsumptionConsent?]) -> ConsumptionConsent? {
        entries.compactMap { $0 }.max { lhs, rhs in
            if lhs.at != rhs.at { return lhs.at < rhs.at }
            return lhs.consented && !rhs.consented
        }
    }
}

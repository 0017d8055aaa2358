/// Consent and refund questions: consent restrictions (RESCIND_CONSENT), Apple's
/// CONSUMPTION_REQUESTs with their answers, and the consumption ledger (the app's consent and
/// usage records).
package protocol ConsumptionStore: StateStore {
    /// The refund questions (CONSUMPTION_REQUEST) signed at or after `requestedSince` (ms since
    /// 1970), oldest first, at most `limit`: `signet consumption requests` and the report.
    func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord]
    /// The consumption ledger's document under `key` (JSON), nil when none was recorded: the
    /// app's facts for answering refund questions, a customer's consent (``ConsumptionConsent``)
    /// or a transaction's usage (``ConsumptionUsage``); read them through their typed accessors.
    func consumptionLedgerEntry(_ key: String) throws -> String?
    /// The refund questions Apple asked about any transaction of one purchase (the
    /// notification's `originalTransactionId`), oldest first, at most `limit`: the retention
    /// policy's `refund_requested` condition reads them.
    func consumptionRequests(originalTransactionId: String, limit: Int) throws -> [ConsumptionRequestRecord]
}

/// Consent and refund questions inside a transaction.
package protocol ConsumptionTransaction {
    /// Announces the app transactions a batch's inputs name, before ``DedupeKeyTransaction/prefetch(keys:originalTransactionIds:)``
    /// and their ``consentRestriction(appTransactionId:)`` calls: a shared store reads them with
    /// the dedupe keys, in one round trip. Optional, like the prefetch.
    func prefetchConsentRestrictions(appTransactionIds: [String]) throws
    /// The consent restriction of one app transaction as of this transaction.
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction?
    /// Inserts or replaces a consent restriction.
    func save(_ restriction: ConsentRestriction) throws

    /// The refund questions kept for one transaction (any status), oldest first.
    func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord]
    /// Inserts or replaces a refund question (keyed by transactionId and requestedAt).
    func save(_ request: ConsumptionRequestRecord) throws
    /// The refund questions whose ``ConsumptionRequestRecord/dueAt`` is at or before `instant`,
    /// earliest first, at most `limit`: what the responder acts on. A shared store locks the
    /// rows it returns (`FOR UPDATE SKIP LOCKED`) so two instances never answer one request.
    func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord]
    /// The consumption ledger's document under `key` as of this transaction.
    func consumptionLedgerEntry(_ key: String) throws -> String?
    /// Inserts or replaces the consumption ledger's document under `key`.
    func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws
}

extension ConsumptionTransaction {
    package func prefetchConsentRestrictions(appTransactionIds: [String]) throws {}
}

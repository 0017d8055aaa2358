extension ConsumptionStore {
    /// The consent ledger's entry for `subject`, nil when none was recorded.
    package func consumptionConsent(_ subject: ConsumptionConsent.Subject) throws -> ConsumptionConsent? {
        try ConsumptionRecordCoding.decode(ConsumptionConsent.self, orNil: try consumptionLedgerEntry(subject.key))
    }

    /// What the app recorded about the use of transaction `transactionId`, nil when nothing.
    package func consumptionUsage(transactionId: String) throws -> ConsumptionUsage? {
        try ConsumptionRecordCoding.decode(
            ConsumptionUsage.self, orNil: try consumptionLedgerEntry(ConsumptionUsage.key(transactionId: transactionId)))
    }

    /// The ledger entry that decides whether `request` may be answered, read outside any
    /// transaction (no row is locked): the newest of those kept for its purchase and its
    /// account (``ConsumptionConsent/deciding(_:)``); nil: no consent known.
    package func consumptionConsent(for request: ConsumptionRequestRecord) throws -> ConsumptionConsent? {
        ConsumptionConsent.deciding(try request.consentSubjects.map { try consumptionConsent($0) })
    }
}

extension ConsumptionStore where Self: TransactionalStore {
    /// Records a ledger entry (the app's backend through the entitlement API, or
    /// `signet consumption consent`), replacing the subject's earlier one. An entry older than
    /// the one kept (`at` before it: a retried or reordered call) changes nothing. Returns the
    /// entry that stands.
    @discardableResult
    package func recordConsumptionConsent(_ consent: ConsumptionConsent) throws -> ConsumptionConsent {
        try withTransaction { transaction in
            if let kept = try transaction.consumptionConsent(consent.subject), kept.at > consent.at { return kept }
            try transaction.save(consent)
            return consent
        }
    }

    /// Records what the app says of a transaction's use, replacing the earlier record unless
    /// that one is newer. Returns the record that stands.
    @discardableResult
    package func recordConsumptionUsage(_ usage: ConsumptionUsage) throws -> ConsumptionUsage {
        try withTransaction { transaction in
            let key = ConsumptionUsage.key(transactionId: usage.transactionId)
            if let kept = try ConsumptionRecordCoding.decode(ConsumptionUsage.self, orNil: try transaction.consumptionLedgerEntry(key)),
                kept.at > usage.at
            {
                return kept
            }
            try transaction.saveConsumptionLedgerEntry(key, try ConsumptionRecordCoding.encode(usage))
            return usage
        }
    }

}

extension ConsumptionTransaction {
    /// The consent ledger's entry for `subject` as of this transaction.
    package func consumptionConsent(_ subject: ConsumptionConsent.Subject) throws -> ConsumptionConsent? {
        try ConsumptionRecordCoding.decode(ConsumptionConsent.self, orNil: try consumptionLedgerEntry(subject.key))
    }

    /// Inserts or replaces the ledger's entry for the consent's subject.
    package func save(_ consent: ConsumptionConsent) throws {
        try saveConsumptionLedgerEntry(consent.subject.key, try ConsumptionRecordCoding.encode(consent))
    }

    /// As `StateStore/consumptionConsent(for:)`, as of this transaction.
    package func consumptionConsent(for request: ConsumptionRequestRecord) throws -> ConsumptionConsent? {
        ConsumptionConsent.deciding(try request.consentSubjects.map { try consumptionConsent($0) })
    }
}

extension ConsumptionRequestRecord {
    /// The ledger subjects whose entries may decide this request's consent: its purchase and
    /// its customer account.
    package var consentSubjects: [ConsumptionConsent.Subject] {
        var subjects: [ConsumptionConsent.Subject] = []
        if let id = originalTransactionId, !id.isEmpty { subjects.append(.originalTransactionId(id)) }
        if let appAccountToken { subjects.append(.appAccountToken(appAccountToken)) }
        return subjects
    }
}

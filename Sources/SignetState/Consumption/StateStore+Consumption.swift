extension StateStore {
    /// Records a ledger entry (the app's backend through the entitlement API, or
    /// `signet consumption consent`), replacing the subject's earlier one. An entry older than
    /// the one kept (`at` before it: a retried or reordered call) changes nothing. Returns the
    /// entry that stands.
    @discardableResult
    public func recordConsumptionConsent(_ consent: ConsumptionConsent) throws -> ConsumptionConsent {
        try withTransaction { transaction in
            if let kept = try transaction.consumptionConsent(consent.subject), kept.at > consent.at { return kept }
            try transaction.save(consent)
            return consent
        }
    }
}

extension StateStore {
    /// The ledger entry that decides whether `request` may be answered, read outside any
    /// transaction (no row is locked): the newest of those kept for its purchase and its
    /// account (``ConsumptionConsent/deciding(_:)``); nil: no consent known.
    public func consumptionConsent(for request: ConsumptionRequestRecord) throws -> ConsumptionConsent? {
        ConsumptionConsent.deciding(try request.consentSubjects.map { try consumptionConsent($0) })
    }
}

extension StateTransaction {
    /// As ``StateStore/consumptionConsent(for:)``, as of this transaction.
    public func consumptionConsent(for request: ConsumptionRequestRecord) throws -> ConsumptionConsent? {
        ConsumptionConsent.deciding(try request.consentSubjects.map { try consumptionConsent($0) })
    }
}

extension ConsumptionRequestRecord {
    /// The ledger subjects whose entries may decide this request's consent: its purchase and
    /// its customer account.
    public var consentSubjects: [ConsumptionConsent.Subject] {
        var subjects: [ConsumptionConsent.Subject] = []
        if let id = originalTransactionId, !id.isEmpty { subjects.append(.originalTransactionId(id)) }
        if let token = appAccountToken, !token.isEmpty { subjects.append(.appAccountToken(token)) }
        return subjects
    }
}

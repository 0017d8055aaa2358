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

extension StateTransaction {
    /// The ledger entry that decides whether `request` may be answered: the newest of those
    /// kept for its purchase and its account (``ConsumptionConsent/deciding(_:)``); nil: no
    /// consent known.
    public func consumptionConsent(for request: ConsumptionRequestRecord) throws -> ConsumptionConsent? {
        var entries: [ConsumptionConsent?] = []
        if let id = request.originalTransactionId { entries.append(try consumptionConsent(.originalTransactionId(id))) }
        if let token = request.appAccountToken, !token.isEmpty { entries.append(try consumptionConsent(.appAccountToken(token))) }
        return ConsumptionConsent.deciding(entries)
    }
}

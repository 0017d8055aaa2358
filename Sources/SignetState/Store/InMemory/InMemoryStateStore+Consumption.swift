import AppStoreModels
import SignetCore
import Synchronization

// InMemoryStateStore: consent and refund questions (ConsumptionStore, ConsumptionTransaction).

/// The ``ConsumptionStore`` role.
extension InMemoryStateStore {
    public func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        contents.withLock { $0.consentRestrictions[appTransactionId] }
    }

    package func consumptionRequests(requestedSince: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        contents.withLock { contents in
            let since = contents.consumptionRequests.values.joined().filter { $0.requestedAt >= requestedSince }
            return Array(since.sorted { ($0.requestedAt, $0.transactionId) < ($1.requestedAt, $1.transactionId) }.prefix(max(0, limit)))
        }
    }

    package func consumptionRequests(originalTransactionId: String, limit: Int) throws -> [ConsumptionRequestRecord] {
        contents.withLock { contents in
            let asked = contents.consumptionRequests.values.joined().filter { $0.originalTransactionId == originalTransactionId }
            return Array(asked.sorted { ($0.requestedAt, $0.transactionId) < ($1.requestedAt, $1.transactionId) }.prefix(max(0, limit)))
        }
    }

    package func consumptionLedgerEntry(_ key: String) throws -> String? {
        contents.withLock { $0.consumptionLedger[key] }
    }
}

extension InMemoryStateStore.Transaction: ConsumptionTransaction {
    func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? {
        restrictions[appTransactionId] ?? base.consentRestrictions[appTransactionId]
    }

    func save(_ restriction: ConsentRestriction) throws { restrictions[restriction.appTransactionId] = restriction }

    func consumptionRequests(transactionId: String) throws -> [ConsumptionRequestRecord] {
        requests[transactionId] ?? base.consumptionRequests[transactionId] ?? []
    }

    func save(_ request: ConsumptionRequestRecord) throws {
        var kept = try consumptionRequests(transactionId: request.transactionId)
        kept.removeAll { $0.requestedAt == request.requestedAt }
        kept.append(request)
        kept.sort { $0.requestedAt < $1.requestedAt }
        requests[request.transactionId] = kept
    }

    /// A scan: refund questions are few, and the memory store serves embedding and tests.
    func consumptionRequestsDue(atOrBefore instant: Int64, limit: Int) throws -> [ConsumptionRequestRecord] {
        var merged = base.consumptionRequests
        merged.merge(requests) { $1 }
        let due = merged.values.joined().filter { ($0.dueAt ?? .max) <= instant }
        return Array(due.sorted { ($0.dueAt ?? 0, $0.transactionId) < ($1.dueAt ?? 0, $1.transactionId) }.prefix(max(0, limit)))
    }

    func consumptionLedgerEntry(_ key: String) throws -> String? { ledger[key] ?? base.consumptionLedger[key] }

    func saveConsumptionLedgerEntry(_ key: String, _ document: String) throws { ledger[key] = document }
}

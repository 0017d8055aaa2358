import Synchronization

// InMemoryStateStore: retention answers and their outcomes (RetentionOfferStore, RetentionOfferTransaction).

/// The ``RetentionOfferStore`` role: scans, as the memory store serves embedding and tests.
extension InMemoryStateStore {
    package func retentionOffer(requestIdentifier: String) throws -> RetentionOfferRecord? {
        contents.withLock { $0.retentionOffers[requestIdentifier] }
    }

    package func retentionOffers(originalTransactionId: String, answeredSince: Int64) throws -> [RetentionOfferRecord] {
        contents.withLock { contents in
            Self.ordered(contents.retentionOffers.values.filter {
                $0.originalTransactionId == originalTransactionId && $0.answeredAt >= answeredSince
            })
        }
    }

    package func recordRetentionOffers(_ records: [RetentionOfferRecord]) throws {
        contents.withLock { contents in
            for record in records where contents.retentionOffers[record.requestIdentifier] == nil {
                contents.retentionOffers[record.requestIdentifier] = record
            }
        }
    }

    package func retentionOffers(answeredSince: Int64, limit: Int) throws -> [RetentionOfferRecord] {
        contents.withLock { contents in
            Array(Self.ordered(contents.retentionOffers.values.filter { $0.answeredAt >= answeredSince }).prefix(max(0, limit)))
        }
    }

    package func pruneRetentionOffers(answeredBefore: Int64, limit: Int) throws -> Int {
        contents.withLock { contents in
            let old = Self.ordered(contents.retentionOffers.values.filter { $0.answeredAt < answeredBefore }).prefix(max(0, limit))
            for record in old { contents.retentionOffers[record.requestIdentifier] = nil }
            return old.count
        }
    }

    private static func ordered(_ records: some Sequence<RetentionOfferRecord>) -> [RetentionOfferRecord] {
        records.sorted { ($0.answeredAt, $0.requestIdentifier) < ($1.answeredAt, $1.requestIdentifier) }
    }

    /// ``RetentionOfferTransaction/settleRetentionOffers(originalTransactionId:outcome:)`` applied.
    static func settle(_ offers: inout [String: RetentionOfferRecord], originalTransactionId: String, outcome: RetentionOutcome) {
        for (id, record) in offers where record.originalTransactionId == originalTransactionId && record.answeredAt <= outcome.signedAt {
            if let current = record.outcome, current.signedAt <= outcome.signedAt { continue }
            offers[id]?.outcome = outcome
        }
    }
}

extension InMemoryStateStore.Transaction: RetentionOfferTransaction {
    func settleRetentionOffers(originalTransactionId: String, outcome: RetentionOutcome) throws {
        settled.append((originalTransactionId, outcome))
    }
}

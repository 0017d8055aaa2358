/// The answers given to Apple's Get Retention Message requests (``RetentionOfferRecord``),
/// and what the customers did afterwards.
package protocol RetentionOfferStore: AnyObject, Sendable {
    /// The answer given to the request `requestIdentifier` (lower-cased); nil when none was.
    func retentionOffer(requestIdentifier: String) throws -> RetentionOfferRecord?
    /// The answers given for one purchase at or after `answeredSince` (ms since 1970),
    /// oldest first: the frequency cap's count.
    func retentionOffers(originalTransactionId: String, answeredSince: Int64) throws -> [RetentionOfferRecord]
    /// Keeps each record unless an answer to its request is kept already (the earlier stands,
    /// when Apple's repeated request raced the first), all in one transaction: the responder
    /// writes the answers of many requests at once.
    func recordRetentionOffers(_ records: [RetentionOfferRecord]) throws
    /// The answers given at or after `answeredSince`, oldest first, at most `limit`: the report.
    func retentionOffers(answeredSince: Int64, limit: Int) throws -> [RetentionOfferRecord]
    /// Deletes at most `limit` answers given before `answeredBefore` (ms since 1970), oldest
    /// first; returns how many it deleted. Bounded, so one call never stalls a batch.
    func pruneRetentionOffers(answeredBefore: Int64, limit: Int) throws -> Int
}

extension RetentionOfferStore {
    /// Keeps `record` unless an answer to its request is kept already; returns the one that stands.
    package func recordRetentionOffer(_ record: RetentionOfferRecord) throws -> RetentionOfferRecord {
        try recordRetentionOffers([record])
        return try retentionOffer(requestIdentifier: record.requestIdentifier) ?? record
    }
}

/// Retention answers inside a transaction: the transition stage settles their outcomes with
/// the notification that tells it.
package protocol RetentionOfferTransaction {
    /// Gives `outcome` to the purchase's answers given at or before `outcome.signedAt` that
    /// have none, or one Apple signed later (the earliest deciding notification wins).
    func settleRetentionOffers(originalTransactionId: String, outcome: RetentionOutcome) throws
}

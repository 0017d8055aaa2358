extension StateJSON {
    /// The consent ledger's entry for `subject` as JSON (`appAccountToken` or
    /// `originalTransactionId`, `consented`, `at`, `by`, `refundPreference`), nil when none was
    /// recorded: `signet consumption consent show` and `GET /v1/consumption/consent`.
    package static func consumptionConsent(_ subject: ConsumptionConsent.Subject, in store: any ConsumptionStore) throws -> [UInt8]? {
        guard let consent = try store.consumptionConsent(subject) else { return nil }
        return try encode(consent)
    }

    /// Records `consent` (`StateStore/recordConsumptionConsent(_:)`) and answers with the entry
    /// that stands (the one kept when it is newer than `consent`).
    package static func recordConsumptionConsent(_ consent: ConsumptionConsent, in store: any StoreRoles) throws -> [UInt8] {
        try encode(try store.recordConsumptionConsent(consent))
    }

    /// What the app recorded of transaction `transactionId`'s use, as JSON; nil when nothing.
    package static func consumptionUsage(transactionId: String, in store: any ConsumptionStore) throws -> [UInt8]? {
        guard let usage = try store.consumptionUsage(transactionId: transactionId) else { return nil }
        return try encode(usage)
    }

    /// Records `usage` (`StateStore/recordConsumptionUsage(_:)`) and answers with the record
    /// that stands.
    package static func recordConsumptionUsage(_ usage: ConsumptionUsage, in store: any StoreRoles) throws -> [UInt8] {
        try encode(try store.recordConsumptionUsage(usage))
    }

    /// Most refund questions one listing returns unless told otherwise.
    package static let defaultConsumptionRequestLimit = 1000
    /// The `limit` a listing accepts, in the CLI and the API alike; more: page with `since`.
    package static let consumptionRequestLimits = 1...10_000

    /// The refund questions signed at or after `since` (ms since 1970), oldest first, as JSON:
    /// `{"asOf", "requests": [...], "truncated"}`, each request as stored plus `overdue` (still
    /// pending at or past its deadline as of `instant`: it will never be answered).
    package static func consumptionRequests(
        since: Int64, limit: Int = defaultConsumptionRequestLimit, in store: any ConsumptionStore, at instant: Int64
    ) throws -> [UInt8] {
        let requests = try store.consumptionRequests(requestedSince: since, limit: limit + 1)
        let listed = requests.prefix(limit).map { Extended($0, "overdue", $0.status == .pending && $0.isPastDeadline(at: instant)) }
        return try encode(Listing(asOf: instant, requests: Array(listed), truncated: requests.count > limit))
    }

    /// Most requests one report reads (beyond: `truncated`).
    package static let consumptionReportLimit = 1_000_000

    /// The ``ConsumptionReport`` of the refund questions signed at or after `since`, as JSON.
    package static func consumptionReport(since: Int64, in store: any ConsumptionStore, at instant: Int64) throws -> [UInt8] {
        let requests = try store.consumptionRequests(requestedSince: since, limit: consumptionReportLimit + 1)
        return try encode(ConsumptionReport(
            Array(requests.prefix(consumptionReportLimit)), since: since, asOf: instant, truncated: requests.count > consumptionReportLimit))
    }

    private struct Listing: Encodable {
        var asOf: Int64
        var requests: [Extended<ConsumptionRequestRecord, Bool>]
        var truncated: Bool
    }
}

/// What came of Apple's retention requests in a window: how many were answered by which rule
/// and kind, how many got the default and why, and per rule how many customers stayed or left
/// (`signet retention report`, `GET /v1/retention/report`).
///
/// The default's own outcomes are the baseline a rule is judged against: customers who saw
/// the default message and stayed anyway.
package struct RetentionReport: Sendable, Hashable, Encodable {
    /// What the customers shown one kind of answer did afterwards (``RetentionOutcomeRule``).
    package struct Outcomes: Sendable, Hashable, Encodable {
        package var answers = 0
        /// Stayed: renewal turned back on, plan switched, offer redeemed, renewed.
        package var kept = 0
        /// Left: renewal turned off, expired.
        package var lost = 0
        /// No deciding notification yet.
        package var undecided = 0

        package init(answers: Int = 0, kept: Int = 0, lost: Int = 0, undecided: Int = 0) {
            self.answers = answers
            self.kept = kept
            self.lost = lost
            self.undecided = undecided
        }

        mutating func add(_ record: RetentionOfferRecord) {
            answers += 1
            switch record.outcome?.kept {
            case true?: kept += 1
            case false?: lost += 1
            case nil: undecided += 1
            }
        }
    }

    /// The start of the window (ms since 1970): answers given at or after it.
    package var since: Int64
    /// When the report was made (ms since 1970).
    package var asOf: Int64
    /// Requests answered (each request once, however often Apple sent it).
    package var requests = 0
    /// Answered by a rule, by what was answered (`message`, `alternate_product`, `promotional_offer`).
    package var answeredByKind: [String: Int] = [:]
    /// Answered the default message, by why (`no_rule`, `unknown_purchase`, `timeout`, ...).
    package var defaultsByReason: [String: Int] = [:]
    /// Per rule: its answers and what the customers did.
    package var rules: [String: Outcomes] = [:]
    /// The customers shown the default message: the baseline.
    package var defaultMessage = Outcomes()
    /// Whether the window held more answers than were read (the figures are a lower bound).
    package var truncated = false

    /// The report of `records` as of `instant`.
    package init(_ records: [RetentionOfferRecord], since: Int64, asOf instant: Int64, truncated: Bool = false) {
        self.since = since
        self.asOf = instant
        self.truncated = truncated
        for record in records {
            requests += 1
            if let rule = record.rule {
                answeredByKind[record.kind, default: 0] += 1
                rules[rule, default: Outcomes()].add(record)
            } else {
                defaultsByReason[record.reason, default: 0] += 1
                defaultMessage.add(record)
            }
        }
    }
}

extension StateJSON {
    /// Most answers one report reads (beyond: `truncated`; narrow `since`). Each carries the
    /// body sent (a signed offer is about 1 KB), so this bounds the report's memory near 300 MB.
    package static let retentionReportLimit = 250_000

    /// The ``RetentionReport`` of the answers given at or after `since`, as JSON.
    package static func retentionReport(since: Int64, in store: any RetentionOfferStore, at instant: Int64) throws -> [UInt8] {
        let records = try store.retentionOffers(answeredSince: since, limit: retentionReportLimit + 1)
        return try encode(RetentionReport(
            Array(records.prefix(retentionReportLimit)), since: since, asOf: instant, truncated: records.count > retentionReportLimit))
    }
}

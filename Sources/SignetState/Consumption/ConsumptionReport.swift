/// What became of the refund questions Apple asked in a window: how many were answered,
/// skipped for lack of consent, late or failed, and how Apple decided, by the refund preference
/// Signet sent, per product (`signet consumption report`, `GET /v1/consumption/report`).
package struct ConsumptionReport: Sendable, Hashable, Encodable {
    /// Requests by status, plus `overdue` (pending at or past the deadline: they will never
    /// be answered, and no responder is taking them).
    package struct Statuses: Sendable, Hashable, Encodable {
        package var requests = 0
        package var answered = 0
        package var skipped = 0
        package var late = 0
        package var failed = 0
        package var pending = 0
        package var overdue = 0
        /// Requests Apple sent again within their window (answered once).
        package var repeats = 0
    }

    /// Apple's decisions on the requests answered with one refund preference.
    package struct Outcomes: Sendable, Hashable, Encodable {
        package var answered = 0
        /// REFUND.
        package var refunded = 0
        /// REFUND_DECLINED.
        package var declined = 0
        /// REFUND_REVERSED (a refund granted, then reversed).
        package var reversed = 0
        /// No decision received yet.
        package var undecided = 0

        package init(answered: Int = 0, refunded: Int = 0, declined: Int = 0, reversed: Int = 0, undecided: Int = 0) {
            self.answered = answered
            self.refunded = refunded
            self.declined = declined
            self.reversed = reversed
            self.undecided = undecided
        }
    }

    /// One product's figures.
    package struct Product: Sendable, Hashable, Encodable {
        package var statuses = Statuses()
        /// By the `refundPreference` sent (`NONE`: answered without one).
        package var outcomesByPreference: [String: Outcomes] = [:]
        /// Apple's decisions on requests Signet did not answer (skipped, late, failed, pending).
        package var outcomesUnanswered = Outcomes()
    }

    /// The start of the window (ms since 1970): requests Apple signed at or after it.
    package var since: Int64
    /// When the report was made (ms since 1970).
    package var asOf: Int64
    package var total = Product()
    /// By product id (`unknown` when the request named none).
    package var products: [String: Product] = [:]
    /// Whether the window held more requests than were read (the figures are a lower bound).
    package var truncated = false

    /// The report of `requests` as of `instant`.
    package init(_ requests: [ConsumptionRequestRecord], since: Int64, asOf instant: Int64, truncated: Bool = false) {
        self.since = since
        self.asOf = instant
        self.truncated = truncated
        for request in requests {
            total.add(request, at: instant)
            products[request.productId ?? "unknown", default: Product()].add(request, at: instant)
        }
    }
}

extension ConsumptionReport.Product {
    mutating func add(_ request: ConsumptionRequestRecord, at instant: Int64) {
        statuses.requests += 1
        statuses.repeats += request.repeats
        switch request.status {
        case .answered: statuses.answered += 1
        case .skipped: statuses.skipped += 1
        case .late: statuses.late += 1
        case .failed: statuses.failed += 1
        case .pending:
            statuses.pending += 1
            if request.isPastDeadline(at: instant) { statuses.overdue += 1 }
        }
        if request.status == .answered {
            outcomesByPreference[request.refundPreference ?? "NONE", default: .init()].add(request, answered: true)
        } else {
            outcomesUnanswered.add(request, answered: false)
        }
    }
}

extension ConsumptionReport.Outcomes {
    mutating func add(_ request: ConsumptionRequestRecord, answered: Bool) {
        if answered { self.answered += 1 }
        switch request.outcome {
        case .refunded: refunded += 1
        case .declined: declined += 1
        case .reversed: reversed += 1
        case nil: undecided += 1
        }
    }
}

/// What the app tells Signet about one purchase's use, for the answer to a refund question
/// about it: how much of a consumable or non-consumable was consumed (Signet cannot know), and
/// whether it was delivered when the app knows better than Signet's state (a server outage, the
/// wrong item). Written by the app's backend (`POST /v1/consumption/usage`) or an operator
/// (`signet consumption usage set`); the newest replaces the earlier one. docs/consumption.md.
package struct ConsumptionUsage: Sendable, Hashable, Codable {
    /// The transaction (the id a CONSUMPTION_REQUEST names).
    package var transactionId: String
    /// Consumed share in milliunits, 0...100000 (50000 = 50%); nil: not known.
    package var consumptionPercentage: Int?
    /// `DELIVERED` or one of Apple's `UNDELIVERED_*` values; nil: Signet's state decides.
    package var deliveryStatus: String?
    /// Whether this customer was offered a sample, trial or preview before the purchase; nil:
    /// the pipeline's `sample_content_provided` settings decide.
    package var sampleContentProvided: Bool?
    /// When it was recorded (ms since 1970).
    package var at: Int64
    /// Who recorded it: `api: <name>`, `cli: <name>`.
    package var by: String

    package init(
        transactionId: String, consumptionPercentage: Int?, deliveryStatus: String? = nil, sampleContentProvided: Bool? = nil,
        at: Int64, by: String
    ) {
        self.transactionId = transactionId
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.at = at
        self.by = by
    }

    /// Apple's `deliveryStatus` values.
    package static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]

    /// The consumption ledger's key of a transaction's usage.
    package static func key(transactionId: String) -> String { "usage:" + transactionId }

    /// Why Apple would refuse an answer carrying these facts, nil when it would not (checked when
    /// they are recorded, so a bad value is refused to the backend, not sent to Apple later).
    package var problem: String? {
        if transactionId.isEmpty { return "transactionId is empty" }
        if let percentage = consumptionPercentage, !(0...100_000).contains(percentage) {
            return "consumptionPercentage is in milliunits, 0 to 100000 (100000 = 100%), not \(percentage)"
        }
        if let status = deliveryStatus {
            guard Self.deliveryStatuses.contains(status) else {
                return "deliveryStatus is one of \(Self.deliveryStatuses.sorted().joined(separator: ", ")), not \(status)"
            }
            if status != "DELIVERED", let percentage = consumptionPercentage, percentage != 0 {
                return "consumptionPercentage must be 0 when deliveryStatus is \(status) (Apple refuses anything else)"
            }
        }
        if consumptionPercentage == nil, deliveryStatus == nil, sampleContentProvided == nil {
            return "give consumptionPercentage, deliveryStatus, sampleContentProvided or several"
        }
        return nil
    }
}

package import AppStoreModels

/// One refund question Apple asked (`CONSUMPTION_REQUEST`), as the store keeps it: what was
/// asked, by when the answer is due, what Signet did about it, and how Apple decided.
///
/// `transition` stores it in the same commit as the notification, pending; the
/// `appstore_consumption` stage answers it (or records why not); the REFUND, REFUND_DECLINED
/// or REFUND_REVERSED that follows is linked to it. docs/consumption.md.
///
/// Keyed by (`transactionId`, `requestedAt`): a request Apple sends again within the first
/// one's 12 hours is the same request (``repeats`` counts it); one signed after that deadline
/// is a new request (the customer asked again).
package struct ConsumptionRequestRecord: Sendable, Hashable, Codable {
    /// Where the request stands.
    package enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Not answered yet; ``dueAt`` says when the responder acts next.
        case pending
        /// Apple accepted the answer (202).
        case answered
        /// Not answered, on purpose: no consent known for the customer (Apple: "If not, don't
        /// respond"), or consent withdrawn.
        case skipped
        /// The deadline passed before an answer went out: never sent late.
        case late
        /// Apple refused the answer for good (a 4xx), or no valid answer could be built.
        case failed
    }

    /// How Apple decided the refund, from the notification that followed.
    package enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
        /// REFUND: Apple refunded.
        case refunded = "REFUND"
        /// REFUND_DECLINED: Apple declined the refund.
        case declined = "REFUND_DECLINED"
        /// REFUND_REVERSED: a refund granted earlier was reversed.
        case reversed = "REFUND_REVERSED"
    }

    /// The transaction the customer asked a refund for (the notification's signed transaction),
    /// the id the answer is sent for.
    package var transactionId: String
    package var originalTransactionId: String?
    package var productId: String?
    /// Apple's transaction `type` (`Consumable`, `Non-Consumable`, `Non-Renewing Subscription`,
    /// `Auto-Renewable Subscription`): it decides what the answer may say.
    package var productType: String?
    package var appAccountToken: AppAccountToken?
    package var bundleId: String?
    package var environment: String?
    /// Apple's `consumptionRequestReason` (`UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, ...).
    package var reason: String?
    /// Whether the purchase was made through the Advanced Commerce API (answered with v1).
    package var advancedCommerce: Bool
    package var notificationUUID: String?
    /// The request's signedDate (ms since 1970).
    package var requestedAt: Int64
    /// The last instant an answer may be sent: 12 hours after ``requestedAt``.
    package var deadline: Int64
    /// When Signet stored the request (ms since 1970).
    package var receivedAt: Int64
    /// How many more times Apple sent the same request (a new notificationUUID within the window).
    package var repeats: Int
    package var status: Status
    /// When the responder acts on it next (ms since 1970); nil once the status is final.
    package var dueAt: Int64?
    /// Attempts to send the answer so far.
    package var attempts: Int
    /// Why it was skipped, failed or late, or the last error of a retried attempt.
    package var detail: String?
    /// When Apple accepted the answer (ms since 1970).
    package var answeredAt: Int64?
    /// The answer's JSON body, as sent (or as it would have been sent, for a late one).
    package var answer: String?
    /// The `refundPreference` the answer carried (nil: none).
    package var refundPreference: String?
    package var outcome: Outcome?
    /// The signedDate of the notification that told the outcome (ms since 1970).
    package var outcomeAt: Int64?
    package var outcomeNotificationUUID: String?

    /// Apple's window: "Respond within 12 hours of receiving the CONSUMPTION_REQUEST notification."
    package static let answerWindow: Int64 = 12 * 3_600_000

    /// A pending request, due now.
    package init(
        transactionId: String, originalTransactionId: String? = nil, productId: String? = nil, productType: String? = nil,
        appAccountToken: AppAccountToken? = nil, bundleId: String? = nil, environment: String? = nil, reason: String? = nil,
        advancedCommerce: Bool = false, notificationUUID: String? = nil, requestedAt: Int64, receivedAt: Int64
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.productType = productType
        self.appAccountToken = appAccountToken
        self.bundleId = bundleId
        self.environment = environment
        self.reason = reason
        self.advancedCommerce = advancedCommerce
        self.notificationUUID = notificationUUID
        self.requestedAt = requestedAt
        let (deadline, overflow) = requestedAt.addingReportingOverflow(Self.answerWindow)
        self.deadline = overflow ? .max : deadline
        self.receivedAt = receivedAt
        self.repeats = 0
        self.status = .pending
        self.dueAt = receivedAt
        self.attempts = 0
    }

    /// Whether a request signed at `instant` for the same transaction is this one again:
    /// signed at or after this one and before its deadline.
    package func covers(requestSignedAt instant: Int64) -> Bool {
        instant >= requestedAt && instant < deadline
    }

    /// Whether the answer can no longer be sent at `instant` without being late.
    package func isPastDeadline(at instant: Int64) -> Bool { instant >= deadline }
}

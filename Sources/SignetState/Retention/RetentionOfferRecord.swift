/// One answer given to Apple's Get Retention Message request, as the store keeps it: what was
/// answered, for which purchase, by which rule, and what the customer did afterwards.
///
/// Keyed by Apple's `requestIdentifier`: a request Apple sends again is answered the same
/// body (``response``), never decided twice. Kept in the store the purchases live in, so the
/// frequency cap and the report read one place.
package struct RetentionOfferRecord: Sendable, Hashable, Codable {
    /// Apple's `requestIdentifier`, lower-cased (Apple types it as a UUID).
    package var requestIdentifier: String
    /// The purchase the customer may cancel.
    package var originalTransactionId: String
    /// `Production` or `Sandbox`, from the verified request.
    package var environment: String
    /// The request's product.
    package var productId: String
    /// `answered` (a rule decided) or `default` (the default message).
    package var result: String
    /// The rule's name when ``result`` is `answered`, else why the default was answered
    /// (`no_rule`, `unknown_purchase`, `timeout`, ...).
    package var reason: String
    /// What was answered: `message`, `alternate_product` or `promotional_offer`.
    package var kind: String
    /// When Signet answered (ms since 1970).
    package var answeredAt: Int64
    /// The `RealtimeResponseBody` sent, byte for byte: what a repeated request is answered.
    package var response: String
    /// What the customer did after the answer; nil until a notification tells.
    package var outcome: RetentionOutcome?

    /// The rule that answered; nil for the default.
    package var rule: String? { result == "answered" ? reason : nil }

    package init(
        requestIdentifier: String, originalTransactionId: String, environment: String, productId: String, result: String,
        reason: String, kind: String, answeredAt: Int64, response: String, outcome: RetentionOutcome? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.productId = productId
        self.result = result
        self.reason = reason
        self.kind = kind
        self.answeredAt = answeredAt
        self.response = response
        self.outcome = outcome
    }
}

/// Whether a customer shown a retention answer stayed, and which notification said so.
package struct RetentionOutcome: Sendable, Hashable, Codable {
    /// True: stayed (renewal turned back on, plan switched, offer redeemed, renewed);
    /// false: left (renewal turned off, expired).
    package var kept: Bool
    /// The deciding notification's type and subtype (`DID_CHANGE_RENEWAL_STATUS`, `AUTO_RENEW_DISABLED`).
    package var notificationType: String
    package var subtype: String?
    /// When Apple signed it (ms since 1970): the earliest deciding notification after the
    /// answer wins, whatever order they arrive in.
    package var signedAt: Int64

    package init(kept: Bool, notificationType: String, subtype: String?, signedAt: Int64) {
        self.kept = kept
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedAt = signedAt
    }
}

/// One operator action taken through Apple (an extension, an app account token set, ...), as
/// the audit log keeps it: who, when, what, and Apple's answer.
///
/// Keyed by the action's request identifier: an action run again with the same identifier
/// (a retry after a timeout, a form submitted twice) is the same action, recorded once; once
/// Apple answered, the recorded answer stands and Apple is not asked again.
package struct SupportActionRecord: Sendable, Hashable, Codable {
    /// Where the action stands.
    package enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Recorded before Apple was asked; still so when the process stopped mid-call (run it
        /// again with the same identifier: Apple takes a resend as the same request).
        case pending
        /// Apple did it.
        case done
        /// Apple refused it (a 4xx), or Apple's answer said it was not done.
        case refused
        /// Apple could not be reached, or the answer could not be read: it may or may not have happened.
        case failed
    }

    /// The action's request identifier (the one sent to Apple where the call takes one).
    package var requestIdentifier: String
    /// Who: the operator's name (`--operator`, the credential's name in the console).
    package var actor: String
    /// `extend`, `extend_all`, `set_token`, ...
    package var action: String
    /// The purchase acted on (nil for a product-wide action).
    package var originalTransactionId: String?
    /// The product of a product-wide action.
    package var productId: String?
    /// What was asked, as JSON (the request body sent).
    package var parameters: String
    /// When the action was recorded (ms since 1970).
    package var at: Int64
    package var status: Status
    /// Apple's answer: the response body, or the error (status, errorCode, message).
    package var answer: String?
    /// When Apple answered (ms since 1970).
    package var answeredAt: Int64?

    package init(
        requestIdentifier: String, actor: String, action: String, originalTransactionId: String? = nil, productId: String? = nil,
        parameters: String, at: Int64, status: Status = .pending, answer: String? = nil, answeredAt: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.actor = actor
        self.action = action
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.parameters = parameters
        self.at = at
        self.status = status
        self.answer = answer
        self.answeredAt = answeredAt
    }
}

/// One delivery check: Signet asked Apple for a TEST notification and watched for it to come
/// back through its own webhook (`appstore_delivery_health`, `signet appstore health`).
package struct DeliveryRoundTrip: Sendable, Hashable, Codable {
    /// How a round trip ended.
    package enum Result: String, Sendable, Hashable, Codable {
        /// The TEST notification came back through the pipeline.
        case success
        /// It did not within the timeout (``DeliveryRoundTrip/detail`` says what was seen).
        case failure
    }

    /// One of Apple's attempts to deliver it (Get Test Notification Status).
    package struct Attempt: Sendable, Hashable, Codable {
        /// When Apple tried (ms since 1970).
        package var date: Int64?
        /// Apple's `sendAttemptResult`: SUCCESS, TIMED_OUT, NO_RESPONSE, SSL_ISSUE, ...
        package var result: String?
    }

    /// Apple's `testNotificationToken`.
    package var token: String
    /// When Signet asked (ms since 1970).
    package var requestedAt: Int64
    /// The TEST notification's id, once Apple's status showed its payload.
    package var notificationUUID: String?
    /// When the pipeline saw it (ms since 1970); nil: never.
    package var seenAt: Int64?
    package var attempts: [Attempt] = []
    package var result: Result?
    /// Why it failed, in words an operator acts on.
    package var detail: String?

    /// From the request to the pipeline seeing it (ms), for a success.
    package var latency: Int64? { seenAt.map { $0 - requestedAt } }
}

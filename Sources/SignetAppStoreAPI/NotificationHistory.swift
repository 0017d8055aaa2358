import AppStoreModels

/// The body of Get Notification History: a window of notification send dates and filters.
///
/// Apple requires the same body on every page of a window, so a resumable consumer keeps
/// this value together with the last pagination token it committed. Dates are UNIX
/// milliseconds; `startDate` is inclusive, `endDate` exclusive.
public struct NotificationHistoryRequest: Codable, Sendable, Hashable {
    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: NotificationType?
    public var notificationSubtype: Subtype?
    /// Only notifications about this transaction (Apple refuses it together with `notificationType`).
    public var transactionId: String?
    /// Only notifications whose delivery to your server never succeeded.
    public var onlyFailures: Bool?

    public init(
        startDate: Int64, endDate: Int64, notificationType: NotificationType? = nil, notificationSubtype: Subtype? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// One page of Get Notification History, as Apple answers it (20 items at most).
public struct NotificationHistoryResponse: Codable, Sendable, Hashable {
    public var notificationHistory: [NotificationHistoryItem]
    public var hasMore: Bool
    /// The token for the next page (present while `hasMore`).
    public var paginationToken: String?

    public init(notificationHistory: [NotificationHistoryItem], hasMore: Bool, paginationToken: String?) {
        self.notificationHistory = notificationHistory
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // An empty window may come without the array; absent and empty mean the same.
        notificationHistory = try container.decodeIfPresent([NotificationHistoryItem].self, forKey: .notificationHistory) ?? []
        hasMore = try container.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        paginationToken = try container.decodeIfPresent(String.self, forKey: .paginationToken)
    }
}

/// One notification Apple sent (or tried to): the exact `signedPayload` the webhook would
/// have received, and each delivery attempt. Verify the payload before trusting it.
public struct NotificationHistoryItem: Codable, Sendable, Hashable {
    public var signedPayload: String
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String, sendAttempts: [SendAttempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try container.decode(String.self, forKey: .signedPayload)
        sendAttempts = try container.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
    }
}

/// One attempt to deliver a notification to the app's server.
public struct SendAttempt: Codable, Sendable, Hashable {
    /// When Apple tried (UNIX milliseconds).
    public var attemptDate: Int64?
    /// `SUCCESS`, `TIMED_OUT`, `NO_RESPONSE`, `CIRCULAR_REDIRECT`, ... kept as Apple's
    /// string, so values added later pass through unchanged.
    public var sendAttemptResult: String?

    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

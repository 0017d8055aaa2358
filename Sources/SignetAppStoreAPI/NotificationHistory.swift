public import AppStoreModels

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

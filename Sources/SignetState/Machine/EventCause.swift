import AppStoreModels
/// What caused an event: an input (notification, forwarded transaction, renewal info) or
/// time alone (a boundary the expiry sweep crossed). Its ``identity`` feeds the
/// deterministic event id.
struct EventCause: Sendable, Hashable {
    var source: EntitlementEvent.Source
    var notificationType: String?
    var subtype: String?
    var notificationUUID: String?
    var signedDate: Int64?
    /// Stable identity of the cause: the same cause always gives the same event ids.
    var identity: String
    /// Whether the cause is a REFUND_REVERSED notification (the only cause of `restored`).
    var isRefundReversal = false

    init(_ input: TransitionInput) {
        source = input.source
        notificationType = input.notificationType?.rawValue
        subtype = input.subtype?.rawValue
        notificationUUID = input.notificationUUID
        signedDate = input.signedDate?.millisecondsSince1970
        identity = input.sourceIdentity
        isRefundReversal = input.source == .notification && input.notificationType == .refundReversed
    }

    /// Time crossed `boundary` (ms since 1970) in the period of `transactionId`.
    init(boundary: Int64, transactionId: String?) {
        source = .clock
        identity = "c:\(transactionId ?? "-"):\(boundary)"
    }
}

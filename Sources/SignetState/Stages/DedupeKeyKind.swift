import AppStoreModels

/// What identifies a retry, configurable as `key:` on `dedupe` and `transition`.
///
/// Never the transactionId alone: a REFUND carries the transactionId of the purchase it
/// refunds, so keying on it would drop the refund as a "retry" of the purchase.
public enum DedupeKeyKind: String, Sendable, Hashable, CaseIterable {
    /// Apple's notificationUUID (identical across Apple's retries of one notification).
    /// A forwarded transaction has none: its transactionId plus signedDate is used.
    case notificationUUID
    /// The notification's content: type, subtype, signedDate and transaction. For sources
    /// that re-sign notifications or lack UUIDs.
    case content

    /// The key of `input` (namespaced, so kinds never collide).
    public func key(for input: TransitionInput) -> String {
        switch self {
        case .notificationUUID:
            return input.sourceIdentity
        case .content:
            let parts = [
                input.source.rawValue,
                input.notificationType?.rawValue ?? "",
                input.subtype?.rawValue ?? "",
                input.signedDate.map { String($0.millisecondsSince1970) } ?? "",
                input.originalTransactionId ?? "",
                input.transaction?.transactionId ?? "",
                input.transaction?.signedDate.map { String($0.millisecondsSince1970) } ?? "",
                input.renewalInfo?.signedDate.map { String($0.millisecondsSince1970) } ?? "",
            ]
            return "c:" + parts.joined(separator: "|")
        }
    }
}

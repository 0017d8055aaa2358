/// When Apple sends a failed App Store Server Notification again: five more attempts, 1, 12,
/// 24, 48 and 72 hours after the previous one (about 6.5 days), in Production only; the
/// Sandbox sends once. Any 200-206 answer ends the retries.
///
/// Source: developer.apple.com, "Responding to App Store Server Notifications". Anything
/// that must outlive Apple's retries (dedupe keys, say) keeps at least ``total``.
public enum NotificationRetrySchedule {
    /// The delay before each retry, counted from the previous attempt.
    public static let delays: [Duration] = [1, 12, 24, 48, 72].map { .seconds($0 * 3600) }

    /// From the first attempt to the last retry: 157 hours (6 days 13 hours).
    public static var total: Duration { delays.reduce(.zero, +) }
}

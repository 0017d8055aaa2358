import AppStoreModels
import Testing

@testable import SignetState

/// Dedupe keys must outlive Apple's retries of a notification, or a late retry is taken
/// for a new notification.
@Suite("Retention defaults")
struct RetentionDefaultsTests {
    @Test func appleRetriesForAboutSixAndAHalfDays() {
        #expect(NotificationRetrySchedule.delays.map { $0 / .seconds(3600) } == [1, 12, 24, 48, 72])
        #expect(NotificationRetrySchedule.total == .seconds(157 * 3600))
    }

    @Test func everyKeyRetentionDefaultCoversApplesRetries() {
        #expect(DedupeStage.Options().retention > NotificationRetrySchedule.total)
        #expect(TransitionStage.Options().retention > NotificationRetrySchedule.total)
    }
}

import AppStoreModels
import Foundation
package import SignetAppStoreAPI
import SignetCore

/// What the `appstore_history` source will fetch: the unfinished checkpoint to resume, or a new window clamped to
/// Apple's lookback. `signet backfill` plans to tell the operator before it starts and the
/// ``AppStoreHistorySource`` plans when it opens; both with this one type, so they agree on
/// the checkpoint's checks and the clamp (`NotificationHistoryLookback`).
package struct AppStoreHistoryPlan: Sendable {
    /// The checkpoint to fetch from (resumed, or new and not yet written).
    package var checkpoint: AppStoreHistoryCheckpoint
    /// Whether ``checkpoint`` is an unfinished one found on disk.
    package var resumed: Bool
    /// The window asked for, when Apple's lookback made it start later (nil otherwise).
    package var clampedFrom: AppStoreHistoryWindow?

    /// Plans a backfill.
    ///
    /// - Parameters:
    ///   - checkpointPath: where an unfinished backfill's checkpoint is kept and found again.
    ///   - start: where the window starts, as ``AppStoreHistoryWindow/instant(_:now:)`` reads it;
    ///     used only when no unfinished checkpoint is at `checkpointPath` (so is `end`).
    ///   - end: where it ends; nil is now.
    ///   - onlyFailures: ask Apple only for notifications it failed to deliver.
    ///   - subWindows: how many windows the range is cut into, asked for one after another.
    ///   - configuration: the app and environment the checkpoint must belong to.
    ///   - now: the current time, ms since 1970 (tests fix it).
    /// - Throws: `SourceError` with the operator's next step: an unreadable checkpoint,
    ///   an unfinished one of another app or store, an instant that does not parse, or a
    ///   window with nothing inside Apple's lookback.
    package static func make(
        checkpointPath: String, start: String, end: String?, onlyFailures: Bool, subWindows: Int,
        configuration: AppStoreAPIConfiguration, now: Int64
    ) throws -> AppStoreHistoryPlan {
        let environment = configuration.environment.rawValue
        let bundleId = configuration.credentials.bundleId
        if let saved = try AppStoreHistoryCheckpoint.load(checkpointPath), !saved.isFinished {
            guard saved.environment == environment, saved.bundleId == bundleId else {
                throw SourceError(
                    "the unfinished backfill in '\(checkpointPath)' is of \(saved.bundleId) (\(saved.environment)), not \(bundleId) (\(environment)); remove it (signet backfill --restart discards it) to start over")
            }
            return AppStoreHistoryPlan(checkpoint: saved, resumed: true, clampedFrom: nil)
        }
        guard let startInstant = AppStoreHistoryWindow.instant(start, now: now) else {
            throw SourceError("the backfill start '\(start)' is not \(AppStoreHistoryWindow.instantForms)")
        }
        var endInstant = now
        if let end {
            guard let instant = AppStoreHistoryWindow.instant(end, now: now) else {
                throw SourceError("the backfill end '\(end)' is not \(AppStoreHistoryWindow.instantForms)")
            }
            endInstant = min(instant, now)
        }
        let asked = AppStoreHistoryWindow(start: startInstant, end: endInstant)
        guard asked.start < asked.end else {
            throw SourceError("the backfill window \(asked) is empty: its start must come before its end")
        }
        let lookback = NotificationHistoryLookback(environment: configuration.environment)
        var window = asked
        switch lookback.verdict(start: asked.start, end: asked.end, now: now) {
        case .inside:
            break
        case .clamped(let start):
            window.start = start
        case .gone, .tooCloseToTheEdge:
            throw SourceError(
                "the backfill window \(asked) lies beyond Apple's lookback (\(lookback.days) days of notification history in \(environment)): Apple has nothing of it")
        }
        let checkpoint = AppStoreHistoryCheckpoint(
            window: window, onlyFailures: onlyFailures, environment: environment, bundleId: bundleId,
            subWindowCount: subWindows, startedAt: now)
        return AppStoreHistoryPlan(checkpoint: checkpoint, resumed: false, clampedFrom: window == asked ? nil : asked)
    }

    /// The warning for a clamped window, nil when it was not clamped.
    package func clampWarning(configuration: AppStoreAPIConfiguration) -> String? {
        guard let clampedFrom else { return nil }
        let lookback = NotificationHistoryLookback(environment: configuration.environment)
        return "the backfill window starts \(AppStoreHistoryWindow.iso(clampedFrom.start)), older than Apple keeps notification history (\(lookback.days) days in \(configuration.environment.rawValue)); clamped to \(checkpoint.window)"
    }
}

/// The name of ``AppStoreHistoryPlan`` before the history source's types were named after it.
@available(*, deprecated, renamed: "AppStoreHistoryPlan")
package typealias BackfillPlan = AppStoreHistoryPlan

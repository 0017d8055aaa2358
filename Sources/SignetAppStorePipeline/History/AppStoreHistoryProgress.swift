import Foundation

/// How far the `appstore_history` source is, for `signet backfill`'s progress lines: what the
/// checkpoint held when it started, what was fetched and committed since, and how much of the
/// window that covers.
package struct AppStoreHistoryProgress: Sendable, Equatable {
    /// The window being backfilled (as clamped).
    package var window: AppStoreHistoryWindow
    /// Whether this run resumed an unfinished checkpoint.
    package var resumed: Bool
    /// Pages and notifications the checkpoint held when this run started.
    package var pagesAtStart: Int
    package var notificationsAtStart: Int
    /// Pages and notifications fetched by this run (committed or not).
    package var pagesFetched: Int
    package var notificationsFetched: Int
    /// Pages committed in all, this run and earlier ones.
    package var pagesCommitted: Int
    /// Milliseconds of the window covered when this run started, and now (by fetched pages).
    package var coveredAtStart: Int64
    package var covered: Int64
    /// Whether every sub-window's last page was committed.
    package var finished: Bool

    /// The share of the window covered, 0...1.
    package var fraction: Double {
        window.milliseconds > 0 ? min(1, Double(covered) / Double(window.milliseconds)) : 1
    }

    /// Seconds left at the pace of this run (`elapsed` seconds so far), nil before there is a pace.
    package func secondsLeft(elapsed: Double) -> Double? {
        let gained = covered - coveredAtStart
        guard gained > 0, elapsed > 0 else { return nil }
        return Double(max(0, window.milliseconds - covered)) * elapsed / Double(gained)
    }
}

extension AppStoreHistoryProgress {
    /// One progress line for people: pages, notifications, `newEvents` (what the pipeline
    /// delivered), the rate of this run over `elapsed` seconds, and the time left.
    package func line(newEvents: Int, elapsed: Double) -> String {
        let rate = elapsed > 0 ? Double(notificationsFetched) / elapsed : 0
        var line = "\(pagesAtStart + pagesFetched) pages, \(notificationsAtStart + notificationsFetched) notifications, "
            + "\(newEvents) new events, \(String(format: "%.1f", rate)) notifications/s, \(Int(fraction * 100))% of the window"
        if finished {
            line += ", done"
        } else if let left = secondsLeft(elapsed: elapsed) {
            line += ", about \(Self.duration(left)) left"
        }
        if resumed { line += " (resumed after \(pagesAtStart) pages)" }
        return line
    }

    /// `42s`, `3m07s`, `2h05m`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m\(String(format: "%02d", total % 60))s" }
        return "\(total / 3600)h\(String(format: "%02d", total % 3600 / 60))m"
    }
}

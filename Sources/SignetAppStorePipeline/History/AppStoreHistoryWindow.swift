import Foundation
import SignetCore

/// The span of notification send dates the `appstore_history` source asks Apple for: `start` inclusive, `end`
/// exclusive, UNIX milliseconds (Get Notification History's `startDate`/`endDate`).
package struct AppStoreHistoryWindow: Codable, Sendable, Hashable, CustomStringConvertible {
    package var start: Int64
    package var end: Int64

    package init(start: Int64, end: Int64) {
        self.start = start
        self.end = end
    }

    package var milliseconds: Int64 { max(0, end - start) }

    /// `count` consecutive sub-windows covering this one, of equal length (the last takes the
    /// remainder); fewer when the window is shorter than `count` milliseconds.
    package func split(into count: Int) -> [AppStoreHistoryWindow] {
        let parts = Int64(max(1, min(count, Int(clamping: milliseconds))))
        let length = milliseconds / parts
        return (0..<parts).map { index in
            AppStoreHistoryWindow(start: start + index * length, end: index == parts - 1 ? end : start + (index + 1) * length)
        }
    }

    package var description: String { "\(Self.iso(start)) ..< \(Self.iso(end))" }

    /// `milliseconds` as ISO-8601 (UTC, seconds).
    package static func iso(_ milliseconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Reads an instant as `signet backfill` and the `appstore_history` source accept it: a
    /// duration before `now` (`90m`, `72h`, `30d`, `2w`), an ISO-8601 date-time
    /// (`2026-11-01T00:00:00Z`) or date (`2026-11-01`, midnight UTC), or UNIX milliseconds.
    /// Nil when it is none of these.
    package static func instant(_ text: String, now: Int64) -> Int64? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if let unit = text.last, let amount = Int64(text.dropLast()), amount >= 0 {
            let scale: Int64? = switch unit {
            case "s": 1000
            case "m": 60_000
            case "h": 3_600_000
            case "d": 86_400_000
            case "w": 7 * 86_400_000
            default: nil
            }
            if let scale {
                let (product, overflow) = amount.multipliedReportingOverflow(by: scale)
                return overflow ? nil : now - product
            }
        }
        // A bare number is UNIX ms only when it is one of this century: `72` is a forgotten unit.
        if let milliseconds = Int64(text) { return milliseconds >= 1_000_000_000_000 ? milliseconds : nil }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        }
        return nil
    }

    /// What ``instant(_:now:)`` accepts, for messages.
    package static let instantForms = "a duration before now (72h, 30d), an ISO-8601 date or date-time (2026-11-01T00:00:00Z), or UNIX milliseconds"
}

/// The name of ``AppStoreHistoryWindow`` before the history source's types were named after it.
@available(*, deprecated, renamed: "AppStoreHistoryWindow")
package typealias BackfillWindow = AppStoreHistoryWindow

public import AppStoreModels
import SignetCore

/// How far back Get Notification History reaches, and the one rule for a window that reaches
/// past it, used when a backfill is planned and again whenever Apple answers 4000012 ("start
/// date too far in the past") while paging.
///
/// Apple keeps 180 days of history in Production and 30 in Sandbox, and checks a window's
/// `startDate` on every page, so a window that starts near the edge can be refused on a later
/// page. The rule:
/// - a window that ends at or before the edge (now minus the lookback) is gone: Apple has
///   nothing of it, and only such a window may be recorded as done without its pages;
/// - one that starts before the edge plus ``margin`` starts there instead (the margin covers
///   clock skew and the time the paging takes; each refusal while paging adds a margin), or,
///   when the window ends before that, half way between the edge and its end;
/// - a window that ends less than ``minimumSpan`` after the edge cannot be clamped: its
///   caller stops with an error and resumes later, when it is gone.
public struct NotificationHistoryLookback: Sendable, Hashable {
    /// How far inside the edge a clamped start goes; each further refusal of the same window
    /// goes one margin deeper (the paging took longer than the margin, or the clocks disagree).
    public static let margin: Int64 = 60 * 60 * 1000
    /// The shortest part left after the edge that is still worth a clamp.
    public static let minimumSpan: Int64 = 2 * 60 * 1000
    /// Clamps of one window before the refusal is reported as an error.
    public static let maximumClamps = 3

    /// The lookback, in milliseconds.
    public var milliseconds: Int64

    public init(environment: AppStoreEnvironment) {
        milliseconds = (environment == .production ? 180 : 30) * 86_400_000
    }

    /// What the rule makes of a window starting at `start` and ending at `end` (UNIX ms).
    public enum Verdict: Sendable, Hashable {
        /// Inside the lookback: ask as it is.
        case inside
        /// Ask from this start instead (later than the window's).
        case clamped(start: Int64)
        /// Ends at or before the edge: Apple has nothing of it.
        case gone
        /// Ends so close after the edge that no start is safe; try again once it is gone.
        case tooCloseToTheEdge
    }

    /// The rule applied at `now`. `refusals` counts Apple's 4000012s for this window so far:
    /// 0 when planning; after a refusal the start moves (only forward) even when it looked
    /// safe by this machine's clock, `refusals` margins inside the edge.
    public func verdict(start: Int64, end: Int64, now: Int64, refusals: Int = 0) -> Verdict {
        let edge = now - milliseconds
        guard end > edge else { return .gone }
        let safe = edge + Self.margin * Int64(max(1, refusals))
        // Half a margin of slack when planning: a window clamped a moment ago is not clamped again.
        guard refusals > 0 || start < safe - Self.margin / 2 else { return .inside }
        if safe < end { return .clamped(start: max(start, safe)) }
        guard end - edge >= Self.minimumSpan else { return .tooCloseToTheEdge }
        let halfway = edge + (end - edge) / 2
        return halfway > start ? .clamped(start: halfway) : .tooCloseToTheEdge
    }

    /// The lookback in whole days, for messages.
    public var days: Int64 { milliseconds / 86_400_000 }
}

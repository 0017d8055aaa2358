import Synchronization

/// Lets a repeated log line through once per interval and key, with how many were held back
/// since: a stalled store answers every retention request with the default (thousands a second
/// at Apple's concurrency), and a log line for each would bury everything else an operator
/// reads at 3 a.m. The metrics count every one.
final class RetentionLogThrottle: Sendable {
    private struct Entry {
        var lastLogged: ContinuousClock.Instant
        var heldBack: Int
    }

    private let interval: Duration
    private let entries = Mutex<[String: Entry]>([:])

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// The number of lines held back since the last one for `key` when this one should be
    /// logged (0 for the first); nil when it is held back.
    func admit(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        entries.withLock { entries in
            guard var entry = entries[key] else {
                entries[key] = Entry(lastLogged: now, heldBack: 0)
                return 0
            }
            guard now - entry.lastLogged >= interval else {
                entry.heldBack += 1
                entries[key] = entry
                return nil
            }
            entries[key] = Entry(lastLogged: now, heldBack: 0)
            return entry.heldBack
        }
    }

    /// What a line says about the lines held back before it (nothing when none were).
    func suffix(_ heldBack: Int) -> String {
        heldBack == 0 ? "" : " (and \(heldBack) more like it since the last such line)"
    }
}

import Metrics
import Synchronization

/// Slows guessing: each failed sign-in from an address doubles the wait before its next
/// attempt is considered (1 s, 2 s, 4 s, ... at most 5 minutes); a success clears it. Counted in
/// `signet_console_sign_ins_total{result="ok|refused|throttled"}`, every series born at 0.
final class SignInThrottle: Sendable {
    private struct Failures {
        var count: Int
        var until: ContinuousClock.Instant
    }

    /// Addresses remembered at most (the oldest forgotten first).
    static let capacity = 10_000
    static let longestWait = Duration.seconds(300)

    private let failures = Mutex<[String: Failures]>([:])
    private let ok: Counter
    private let refused: Counter
    private let throttled: Counter

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        let label = "signet_console_sign_ins_total"
        ok = Counter(label: label, dimensions: [("result", "ok")], factory: factory)
        refused = Counter(label: label, dimensions: [("result", "refused")], factory: factory)
        throttled = Counter(label: label, dimensions: [("result", "throttled")], factory: factory)
        for counter in [ok, refused, throttled] { counter.increment(by: 0) }
    }

    /// How long `address` must still wait before an attempt is considered; nil: go ahead.
    func wait(_ address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        let remaining = failures.withLock { failures -> Duration? in
            guard let entry = failures[address], entry.until > now else { return nil }
            return entry.until - now
        }
        if remaining != nil { throttled.increment() }
        return remaining
    }

    func succeeded(_ address: String) {
        ok.increment()
        _ = failures.withLock { $0.removeValue(forKey: address) }
    }

    /// Records a failure; returns how long the address now waits.
    @discardableResult
    func failed(_ address: String, now: ContinuousClock.Instant = .now) -> Duration {
        refused.increment()
        return failures.withLock { failures in
            if failures[address] == nil, failures.count >= Self.capacity,
                let oldest = failures.min(by: { $0.value.until < $1.value.until })?.key
            {
                failures[oldest] = nil
            }
            let count = (failures[address]?.count ?? 0) + 1
            let wait = min(Duration.seconds(1 << min(count - 1, 20)), Self.longestWait)
            failures[address] = Failures(count: count, until: now + wait)
            return wait
        }
    }
}

import Foundation
import SignetCore
import Synchronization

/// What the pipeline did, in 10-minute buckets over the last 24 hours of this process: the
/// operations page's charts. Sampled from the runner's live counts (once a minute, and when the
/// page is read); a restart starts it again, which the page says.
final class OperationsHistory: Sendable {
    struct Bucket: Sendable, Equatable {
        /// The bucket's start (ms since 1970).
        var start: Int64
        var read = 0
        var passed = 0
        var rejected = 0
        var rejectedByReason: [String: Int] = [:]
    }

    static let bucketMilliseconds: Int64 = 10 * 60_000
    static let buckets = 144

    private struct State {
        var last: RunSummary?
        var buckets: [Bucket] = []
    }

    private let state = Mutex(State())
    private let summary: @Sendable () -> RunSummary
    /// When sampling began (ms since 1970).
    let since: Int64

    init(summary: @escaping @Sendable () -> RunSummary, now: Int64 = WallClock.milliseconds()) {
        self.summary = summary
        since = now
    }

    /// Adds what happened since the last sample to the bucket of `now`.
    func sample(now: Int64 = WallClock.milliseconds()) {
        let current = summary()
        state.withLock { state in
            defer { state.last = current }
            let previous = state.last ?? RunSummary()
            let start = now - now % Self.bucketMilliseconds
            if state.buckets.last?.start != start { state.buckets.append(Bucket(start: start)) }
            state.buckets.removeFirst(max(0, state.buckets.count - Self.buckets))
            // A runner's counts only grow; max(0, …) keeps a replaced runner from drawing negative bars.
            state.buckets[state.buckets.count - 1].read += max(0, current.read - previous.read)
            state.buckets[state.buckets.count - 1].passed += max(0, current.passed - previous.passed)
            state.buckets[state.buckets.count - 1].rejected += max(0, current.rejected - previous.rejected)
            for (reason, count) in current.rejectedByReason {
                let added = max(0, count - (previous.rejectedByReason[reason] ?? 0))
                if added > 0 { state.buckets[state.buckets.count - 1].rejectedByReason[reason, default: 0] += added }
            }
        }
    }

    /// The last 24 hours' buckets, oldest first, one per 10 minutes (empty ones included).
    func last24Hours(now: Int64 = WallClock.milliseconds()) -> [Bucket] {
        let kept = state.withLock { $0.buckets }
        let newest = now - now % Self.bucketMilliseconds
        let byStart = Dictionary(kept.map { ($0.start, $0) }, uniquingKeysWith: { first, _ in first })
        return (0..<Self.buckets).reversed().map { index in
            let start = newest - Int64(index) * Self.bucketMilliseconds
            return byStart[start] ?? Bucket(start: start)
        }
    }

    /// Samples once a minute until cancelled.
    func sampleEveryMinute() async {
        while !Task.isCancelled {
            sample()
            try? await Task.sleep(for: .seconds(60))
        }
    }
}

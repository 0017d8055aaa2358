import Synchronization

/// Apple's rate-limit classes: each endpoint has its own per-app budget; these are the
/// two the client uses.
public enum AppStoreAPIEndpointClass: String, Sendable, Hashable, CaseIterable {
    /// 50/s in Production: Get Notification History, Get All Subscription Statuses, Get
    /// Transaction Info, Get Transaction History.
    case standard
    /// 1/s in Production: Request a Test Notification, Get Test Notification Status.
    case testNotification
}

/// Spaces requests so that no bucket goes faster than its rate, and holds a bucket back
/// after a 429 until Apple's `Retry-After`.
///
/// One bucket per (host, bundle id, endpoint class): Apple's limits are per app, per
/// environment (host) and per endpoint. ``shared`` is the process-wide instance every
/// client uses unless given another, so several clients of one app in one process share
/// the budget. Spacing (one request every `1/rate` s, no burst) never exceeds the rate in
/// any window, which also keeps Apple's hourly accounting happy.
///
/// Each waiter books a slot one interval after the last booked one and sleeps until it, so
/// waiters wake one at a time (when all slept until the same earliest instant, every grant
/// woke every waiter, and each wake-up is a timer and a thread's CPU). The spacing itself is
/// still measured from when the previous request actually went: a waiter that wakes before
/// that (its predecessor was woken late) waits out the difference, and one that a 429's pause
/// overtook books a slot after the pause.
public final class AppStoreAPIRateLimiter: Sendable {
    /// The instance every ``AppStoreServerAPIClient`` uses by default.
    public static let shared = AppStoreAPIRateLimiter()

    /// One budget.
    public struct Bucket: Sendable, Hashable {
        public var baseURL: String
        public var bundleId: String
        public var endpointClass: AppStoreAPIEndpointClass

        public init(baseURL: String, bundleId: String, endpointClass: AppStoreAPIEndpointClass) {
            self.baseURL = baseURL
            self.bundleId = bundleId
            self.endpointClass = endpointClass
        }
    }

    private struct State {
        /// When the last request of the bucket went.
        var lastGrant: ContinuousClock.Instant?
        /// No request before this (a 429's Retry-After, or its backoff).
        var pausedUntil: ContinuousClock.Instant
        /// The first slot no waiter has booked yet.
        var nextSlot: ContinuousClock.Instant?

        /// The slot for a waiter asking at `now`; books it.
        mutating func book(now: ContinuousClock.Instant, interval: Duration) -> ContinuousClock.Instant {
            let slot = max(nextSlot ?? now, lastGrant.map { $0 + interval } ?? now, pausedUntil, now)
            nextSlot = slot + interval
            return slot
        }
    }

    private let buckets = Mutex<[Bucket: State]>([:])

    public init() {}

    /// Waits for this bucket's next slot. Throws only `CancellationError`.
    public func acquire(_ bucket: Bucket, requestsPerSecond: Double) async throws {
        let interval = Duration.seconds(1 / requestsPerSecond)
        var slot = buckets.withLock { buckets in
            let now = ContinuousClock.now
            return buckets[bucket, default: State(lastGrant: nil, pausedUntil: now)].book(now: now, interval: interval)
        }
        while true {
            if slot > .now { try await Task.sleep(until: slot, clock: .continuous) }
            // nil: go now (the grant is recorded); else when to look again.
            let again = buckets.withLock { buckets -> ContinuousClock.Instant? in
                let now = ContinuousClock.now
                var state = buckets[bucket] ?? State(lastGrant: nil, pausedUntil: now)
                defer { buckets[bucket] = state }
                // A 429 paused the bucket: a new slot after the pause, behind the ones booked already.
                if state.pausedUntil > now { return state.book(now: now, interval: interval) }
                // The previous request went late: wait out its interval, keeping this place.
                if let last = state.lastGrant, last + interval > now { return last + interval }
                state.lastGrant = now
                return nil
            }
            guard let again else { return }
            slot = again
        }
    }

    /// No request of `bucket` goes before `instant` (a later pause already set wins).
    package func pause(_ bucket: Bucket, until instant: ContinuousClock.Instant) {
        buckets.withLock { buckets in
            var state = buckets[bucket] ?? State(lastGrant: nil, pausedUntil: instant)
            state.pausedUntil = max(state.pausedUntil, instant)
            buckets[bucket] = state
        }
    }
}

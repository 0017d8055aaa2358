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
/// The spacing is measured from when the previous request actually went, not from a slot
/// booked in advance: waiters that a busy machine wakes late do not all go at once, they
/// still leave one interval between each other.
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
    }

    private let buckets = Mutex<[Bucket: State]>([:])

    public init() {}

    /// Waits for this bucket's next slot. Throws only `CancellationError`.
    public func acquire(_ bucket: Bucket, requestsPerSecond: Double) async throws {
        let interval = Duration.seconds(1 / requestsPerSecond)
        while true {
            let now = ContinuousClock.now
            // nil: go now (the grant is recorded); else sleep until then and ask again, since
            // another waiter may take that instant (or a 429 may move the pause past it).
            let wait = buckets.withLock { buckets -> ContinuousClock.Instant? in
                var state = buckets[bucket] ?? State(lastGrant: nil, pausedUntil: now)
                let earliest = max(state.lastGrant.map { $0 + interval } ?? now, state.pausedUntil)
                guard earliest <= now else { return earliest }
                state.lastGrant = now
                buckets[bucket] = state
                return nil
            }
            guard let wait else { return }
            try await Task.sleep(until: wait, clock: .continuous)
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

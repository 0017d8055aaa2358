public import AppStoreModels
public import Logging
public import SignetCore
import Synchronization

/// Apple's rate-limit classes: each endpoint has its own per-app budget; endpoints of one
/// class share a bucket at their common rate, which never exceeds any one's limit.
public enum AppStoreAPIEndpointClass: String, Sendable, Hashable, CaseIterable {
    /// 50/s in Production: Get Notification History, Get All Subscription Statuses, Get
    /// Transaction Info, Get Transaction History.
    case standard
    /// 50/s in Production: Send Consumption Information (v2 and v1). Its own bucket, so a 429
    /// on answering refund requests never pauses history paging, nor the other way round.
    case consumption
    /// 1/s in Production: Request a Test Notification, Get Test Notification Status.
    case testNotification
    /// 1/s in Production: the Retention Messaging API's configuration endpoints (realtime URL,
    /// messages, images, Get and Delete Default Message, the performance test). Apple budgets
    /// each endpoint apart; sharing one budget of the same rate never exceeds any of them.
    case retentionMessaging
    /// 10/s in Production: Configure Default Message (one per product and locale).
    case retentionDefaultMessage
    /// 10/s in Production: Look Up Order ID (support: a customer's order id from Apple's receipt).
    case orderLookup
    /// 10/s in Production: Get Refund History.
    case refundHistory
    /// 20/s in Production: Extend a Subscription Renewal Date.
    case renewalExtension
    /// 20/s in Production: Set App Account Token.
    case appAccountToken
    /// 1/s in Production: Extend Subscription Renewal Dates for All Active Subscribers, and the
    /// status of such a request (Apple lists no limit for the status; polling it at the mass
    /// extension's rate stays within any).
    case massExtension

    /// Apple's documented limit for one endpoint of this class, per app, in requests per
    /// second: quoted per second, enforced hourly, and Sandbox gets 10% of Production's
    /// (developer.apple.com/documentation/appstoreserverapi/identifying-rate-limits).
    public func appleLimit(in environment: AppStoreEnvironment) -> Double {
        let production: Double = switch self {
        case .standard, .consumption: 50
        case .testNotification, .retentionMessaging, .massExtension: 1
        case .retentionDefaultMessage, .orderLookup, .refundHistory: 10
        case .renewalExtension, .appAccountToken: 20
        }
        return environment == .production ? production : production / 10
    }

    /// What Signet spends when not told otherwise: 80% of the limit for the busy endpoints,
    /// so a hand-run `signet appstore` call beside a backfill finds room; the whole (tiny)
    /// limit for the test notification.
    public func defaultRate(in environment: AppStoreEnvironment) -> Double {
        switch self {
        case .standard, .consumption: appleLimit(in: environment) * 0.8
        case .testNotification, .retentionMessaging, .retentionDefaultMessage, .orderLookup, .refundHistory, .renewalExtension,
            .appAccountToken, .massExtension:
            appleLimit(in: environment)
        }
    }

    /// The name in metrics and logs.
    var label: String {
        switch self {
        case .standard: "standard"
        case .consumption: "consumption"
        case .testNotification: "test_notification"
        case .retentionMessaging: "retention_messaging"
        case .retentionDefaultMessage: "retention_default_message"
        case .orderLookup: "order_lookup"
        case .refundHistory: "refund_history"
        case .renewalExtension: "renewal_extension"
        case .appAccountToken: "app_account_token"
        case .massExtension: "mass_extension"
        }
    }
}

/// Spaces requests so that no bucket goes faster than its rate, and holds a bucket back
/// after a 429 until Apple's `Retry-After`.
///
/// One bucket per (bundle id, environment, endpoint class): Apple's limits are per app, per
/// environment and per endpoint, whichever host (Apple's, a proxy) the requests go through.
/// ``shared`` is the process-wide instance every client uses unless given another, so
/// several clients of one app in one process share the budget; with a `SharedRateBudget`
/// (the PostgreSQL store) every instance of a deployment books from one budget. Spacing (one
/// request every `1/rate` s, no burst) never exceeds the rate in any window, which also keeps
/// Apple's hourly accounting happy. The rate belongs to the bucket: clients that ask with
/// different rates all get the lowest one asked for, so they never work against each other's
/// spacing.
///
/// Each waiter books its own slot, one interval after the last booked one, and sleeps until
/// it: waiters wake one at a time, one timer each. The spacing is measured from when the
/// previous request actually went: a waiter that wakes before that (its predecessor was woken
/// late) waits out the difference, and one that a 429's pause overtook books a slot after the
/// pause.
public final class AppStoreAPIRateLimiter: Sendable {
    /// The instance every ``AppStoreServerAPIClient`` uses by default.
    public static let shared = AppStoreAPIRateLimiter()

    /// One budget.
    public struct Bucket: Sendable, Hashable, CustomStringConvertible {
        public var bundleId: String
        public var environment: AppStoreEnvironment
        public var endpointClass: AppStoreAPIEndpointClass

        public init(bundleId: String, environment: AppStoreEnvironment, endpointClass: AppStoreAPIEndpointClass) {
            self.bundleId = bundleId
            self.environment = environment
            self.endpointClass = endpointClass
        }

        public var description: String { "\(bundleId) \(environment.rawValue) \(endpointClass.label)" }

        /// Its name in a ``SharedRateBudget`` (`appstore:<bundle id>:<environment>:<class>`).
        var sharedName: String { "appstore:\(bundleId):\(environment.rawValue):\(endpointClass.label)" }
    }

    private struct State {
        /// The spacing: one over the lowest rate any caller asked for.
        var interval: Duration
        /// When the last request of the bucket went.
        var lastGrant: ContinuousClock.Instant?
        /// No request before this (a 429's Retry-After, or its backoff).
        var pausedUntil: ContinuousClock.Instant
        /// The first slot no waiter has booked yet.
        var nextSlot: ContinuousClock.Instant?

        /// The slot for a waiter asking at `now`; books it.
        mutating func book(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
            let slot = max(nextSlot ?? now, lastGrant.map { $0 + interval } ?? now, pausedUntil, now)
            nextSlot = slot + interval
            return slot
        }
    }

    private let buckets = Mutex<[Bucket: State]>([:])
    /// Where the budget is kept across processes (nil: this process only), and the thread its
    /// blocking calls run on.
    private let sharedBudget: (budget: any SharedRateBudget, calls: BlockingExecutor)?
    private let logger: Logger
    /// Slots booked for one request at most when each was missed by a late wake-up.
    static let maximumBookings = 3
    /// Whether the shared budget failed and this process spends its own meanwhile (said once).
    private let fallenBack = Atomic<Bool>(false)

    /// A limiter of this process's own budget.
    public init() {
        sharedBudget = nil
        logger = Logger(label: "signet.appstore-api")
    }

    /// A limiter whose budgets every process using `sharedBudget` spends together (instances
    /// on one PostgreSQL): each request books its slot there, one round trip. When the store
    /// cannot be reached, the process spends its own budget (said once, at error level) until
    /// it answers again.
    public init(sharedBudget: any SharedRateBudget, logger: Logger = Logger(label: "signet.appstore-api")) {
        self.sharedBudget = (sharedBudget, BlockingExecutor(label: "signet.appstore-api.budget"))
        self.logger = logger
    }

    /// Waits for this bucket's next slot. Throws only `CancellationError`.
    /// - Parameters:
    ///   - bucket: the endpoint's budget (Apple limits each endpoint on its own).
    ///   - requestsPerSecond: the caller's rate; the bucket goes at the lowest rate
    ///     any caller asked for.
    public func acquire(_ bucket: Bucket, requestsPerSecond: Double) async throws {
        let asked = Duration.seconds(1 / requestsPerSecond)
        if let sharedBudget, try await acquireShared(bucket, interval: asked, from: sharedBudget) { return }
        var slot = buckets.withLock { buckets in
            let now = ContinuousClock.now
            var state = buckets[bucket] ?? State(interval: asked, pausedUntil: now)
            state.interval = max(state.interval, asked)
            defer { buckets[bucket] = state }
            return state.book(now: now)
        }
        while true {
            if slot > .now { try await Task.sleep(until: slot, clock: .continuous) }
            // nil: go now (the grant is recorded); else when to look again.
            let again = buckets.withLock { buckets -> ContinuousClock.Instant? in
                let now = ContinuousClock.now
                var state = buckets[bucket] ?? State(interval: asked, pausedUntil: now)
                defer { buckets[bucket] = state }
                // A 429 paused the bucket: a new slot after the pause, behind the ones booked already.
                if state.pausedUntil > now { return state.book(now: now) }
                // The previous request went late: wait out its interval, keeping this place.
                if let last = state.lastGrant, last + state.interval > now { return last + state.interval }
                state.lastGrant = now
                return nil
            }
            guard let again else { return }
            slot = again
        }
    }

    /// A slot booked in the shared budget, waited for; false when the budget failed (the
    /// caller then spaces by this process's own budget).
    private func acquireShared(
        _ bucket: Bucket, interval: Duration, from shared: (budget: any SharedRateBudget, calls: BlockingExecutor)
    ) async throws -> Bool {
        // A pause this process knows of is waited out here, booking nothing meanwhile.
        let paused = buckets.withLock { $0[bucket]?.pausedUntil }
        if let paused, paused > .now { try await Task.sleep(until: paused, clock: .continuous) }
        do {
            for attempt in 1...Self.maximumBookings {
                let wait = try await withTaskExecutorPreference(shared.calls) {
                    try shared.budget.bookSlot(bucket: bucket.sharedName, interval: interval)
                }
                if fallenBack.exchange(false, ordering: .relaxed) {
                    logger.notice("App Store Server API: the budget shared in \(shared.budget.budgetDescription) answers again")
                }
                let slot = ContinuousClock.now + wait
                if wait > .zero { try await Task.sleep(until: slot, clock: .continuous) }
                // Woken more than half an interval late (a busy machine), this request would go
                // together with another instance's next one: book a later slot instead, a few
                // times at most (the missed slot is lost, never spent twice).
                if ContinuousClock.now - slot <= interval / 2 || attempt == Self.maximumBookings { break }
            }
            return true
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if !fallenBack.exchange(true, ordering: .relaxed) {
                logger.error(
                    "App Store Server API: cannot book requests in the budget shared in \(shared.budget.budgetDescription) (\(error)); this process spends its own budget until it answers, so instances together may exceed Apple's limit meanwhile")
            }
            return false
        }
    }

    /// No request of `bucket` goes before `delay` from now, in this process and, with a shared
    /// budget, in every process sharing it (a later pause already set wins). Returns whether
    /// this pause ends later than the one already set here: the caller that extended it
    /// reports it, the others that got the same 429 stay quiet.
    package func pause(_ bucket: Bucket, for delay: Duration) async -> Bool {
        let instant = ContinuousClock.now + delay
        let extended = buckets.withLock { buckets in
            var state = buckets[bucket] ?? State(interval: .zero, pausedUntil: .now)
            // Two 429s a moment apart ask for the same instant give or take a millisecond.
            let extended = instant > state.pausedUntil + .seconds(1)
            state.pausedUntil = max(state.pausedUntil, instant)
            buckets[bucket] = state
            return extended
        }
        if extended, let sharedBudget {
            do {
                try await withTaskExecutorPreference(sharedBudget.calls) {
                    try sharedBudget.budget.pause(bucket: bucket.sharedName, for: delay)
                }
            } catch {
                logger.warning("App Store Server API: could not share Apple's pause through \(sharedBudget.budget.budgetDescription): \(error)")
            }
        }
        return extended
    }
}

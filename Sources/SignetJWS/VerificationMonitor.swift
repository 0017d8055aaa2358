public import Logging
public import Metrics
public import SignetCore
import Synchronization

/// Watches what `verify` accepts and rejects, so that a misconfiguration cannot stay silent.
///
/// A wrong bundle id, a Production deployment left on the Sandbox default or a wrong app id
/// rejects every real notification, and the webhook still answers 200 (dead-lettered is
/// committed), so Apple counts them delivered and never retries. The monitor makes that loud:
/// - a warning per configuration-class reason, at most once a minute, with the count since
///   the last one and the last rejection's detail (expected and received value);
/// - `/readyz` turns unready (``readiness()``) while the recent notifications, at least
///   `minimumEvidence` of them, were all rejected for such a reason; one accepted
///   notification makes it ready again;
/// - metrics to alert on: `signet_configuration_rejections_total{reason}`,
///   `signet_misconfigured` (1 or 0), `signet_notifications_verified_total{type}` (TEST
///   included: "Apple reaches us"), `signet_last_verified_notification_timestamp_seconds`
///   and `signet_signed_date_lag_seconds` (a histogram of how long after Apple's signedDate
///   `verify` accepted each notification: Apple's delivery delay and retries plus Signet's
///   own backlog).
///
/// Forged and malformed input (bad signatures, chains to no root) is not counted: that is an
/// attacker's traffic, not a sign of a wrong setting. Neither is what the app's backend relays
/// on the purchase path: any user of the app can make it relay another app's transaction, so
/// its rejections are counted apart (`signet_relayed_rejections_total{reason}`) and never
/// touch readiness or `signet_misconfigured`. Observed once per batch.
public final class VerificationMonitor: Sendable {
    /// How many recent outcomes (accepted, or rejected for a configuration reason) are kept.
    public static let window = 20
    /// How many of them must be there, all rejections, before readiness turns.
    package static let minimumEvidence = 5
    /// The least time between two warnings for one reason.
    package static let warningInterval = Duration.seconds(60)

    private struct State {
        /// Recent outcomes, oldest first: the reason of a configuration rejection, or nil for accepted.
        var recent: [ReasonCode?] = []
        /// Per reason: rejections since its last warning, the last detail, when it was last logged.
        var unreported: [ReasonCode: (count: Int, detail: String)] = [:]
        var lastWarned: [ReasonCode: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let misconfigured: Gauge
    private let lastVerified: Gauge
    private let signedDateLag: Timer
    private let counters: DimensionedMetrics

    /// A monitor that logs to `logger` and counts with `factory`'s metrics.
    public init(logger: Logger, factory: any MetricsFactory = MetricsSystem.factory) {
        self.logger = logger
        counters = DimensionedMetrics(factory: factory)
        misconfigured = Gauge(label: "signet_misconfigured", factory: factory)
        lastVerified = Gauge(label: "signet_last_verified_notification_timestamp_seconds", factory: factory)
        signedDateLag = Timer(label: Self.signedDateLagLabel, preferredDisplayUnit: .seconds, factory: factory)
    }

    /// The histogram's name, for backends that give it buckets of its own (seconds to weeks).
    public static let signedDateLagLabel = "signet_signed_date_lag_seconds"

    /// One batch's outcomes: verified notifications by type, rejections (reason, detail), and
    /// for each verified notification with a signedDate the seconds since it (negative with a
    /// skewed clock: counted as 0).
    package func observe(
        verifiedTypes: [String: Int], rejections: [(reason: ReasonCode, detail: String)], relayedRejections: [ReasonCode] = [],
        signedDateLags: [Double] = [], at now: ContinuousClock.Instant = .now
    ) {
        for reason in relayedRejections {
            counter("signet_relayed_rejections_total", ("reason", reason.rawValue)).increment()
        }
        for lag in signedDateLags {
            signedDateLag.recordNanoseconds(Int64(clamping: UInt64(min(max(lag, 0), 1e9) * 1e9)))
        }
        let configuration = rejections.filter { ReasonCode.configurationMismatches.contains($0.reason) }
        let accepted = verifiedTypes.values.reduce(0, +)
        guard accepted > 0 || !configuration.isEmpty else { return }
        for (type, count) in verifiedTypes {
            counter("signet_notifications_verified_total", ("type", type)).increment(by: count)
        }
        if accepted > 0 { lastVerified.record(WallClock.milliseconds() / 1000) }
        for rejection in configuration {
            counter("signet_configuration_rejections_total", ("reason", rejection.reason.rawValue)).increment()
        }
        let (warnings, isMisconfigured) = state.withLock { state -> ([(ReasonCode, Int, String)], Bool) in
            // Accepted ones first, then the rejections: a batch that mixes them is not "all rejected".
            state.recent += Array(repeating: nil, count: min(accepted, Self.window))
            state.recent += configuration.suffix(Self.window).map(\.reason)
            if state.recent.count > Self.window { state.recent.removeFirst(state.recent.count - Self.window) }
            var due: [(ReasonCode, Int, String)] = []
            for rejection in configuration {
                var entry = state.unreported[rejection.reason] ?? (0, "")
                entry.count += 1
                entry.detail = rejection.detail
                state.unreported[rejection.reason] = entry
            }
            for (reason, entry) in state.unreported {
                if let last = state.lastWarned[reason], now - last < Self.warningInterval { continue }
                due.append((reason, entry.count, entry.detail))
                state.lastWarned[reason] = now
                state.unreported[reason] = nil
            }
            return (due, Self.isMisconfigured(state.recent))
        }
        misconfigured.record(isMisconfigured ? 1 : 0)
        for (reason, count, detail) in warnings {
            logger.warning(
                "verify: \(count) notification\(count == 1 ? "" : "s") rejected for \(reason) (last: \(detail)); check the verify stage's settings (SIGNET_BUNDLE_ID, SIGNET_ENVIRONMENT, SIGNET_APP_APPLE_ID): these are answered 200 and dead-lettered, so Apple does not send them again",
                metadata: ["reason": "\(reason)", "count": "\(count)"])
        }
    }

    /// Unready while the recent notifications were all rejected for a configuration reason.
    public func readiness() -> HealthCheck {
        let recent = state.withLock { $0.recent }
        guard Self.isMisconfigured(recent), let reason = recent.last.flatMap({ $0 }) else {
            return .ready("verify")
        }
        return .notReady(
            "verify", "the last \(recent.count) notifications were all rejected for configuration reasons (last: \(reason)); check the verify settings")
    }

    private static func isMisconfigured(_ recent: [ReasonCode?]) -> Bool {
        recent.count >= minimumEvidence && recent.allSatisfy { $0 != nil }
    }

    private func counter(_ label: String, _ dimension: (String, String)) -> Counter {
        counters.counter(label, [dimension])
    }
}

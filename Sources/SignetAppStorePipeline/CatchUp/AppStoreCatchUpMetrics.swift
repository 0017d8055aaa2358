import Metrics

/// The catch-up's figures on /metrics, so "Signet recovers what Apple could not deliver"
/// can be watched and alerted on (a last success that grows old, failures that pile up).
struct AppStoreCatchUpMetrics: Sendable {
    private let succeeded: Counter
    private let failed: Counter
    private let lastSuccess: Gauge
    private let found: Counter
    private let recovered: Counter
    private let duplicates: Counter
    private let rejected: Counter

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        succeeded = Counter(label: "signet_catch_up_sweeps_total", dimensions: [("result", "success")], factory: factory)
        failed = Counter(label: "signet_catch_up_sweeps_total", dimensions: [("result", "failure")], factory: factory)
        lastSuccess = Gauge(label: "signet_catch_up_last_success_timestamp_seconds", factory: factory)
        found = Counter(label: "signet_catch_up_notifications_found_total", factory: factory)
        recovered = Counter(label: "signet_catch_up_notifications_total", dimensions: [("outcome", "recovered")], factory: factory)
        duplicates = Counter(label: "signet_catch_up_notifications_total", dimensions: [("outcome", "dropped")], factory: factory)
        rejected = Counter(label: "signet_catch_up_notifications_total", dimensions: [("outcome", "rejected")], factory: factory)
    }

    func sweepSucceeded(at milliseconds: Int64) {
        succeeded.increment()
        lastSuccess.record(milliseconds / 1000)
    }

    func sweepFailed() { failed.increment() }

    /// Notifications Apple's history returned.
    func fetched(_ count: Int) { found.increment(by: count) }

    /// What became of committed notifications: new to Signet, dropped (dedupe: processed before), dead-lettered.
    func settled(_ counts: (recovered: Int, duplicates: Int, rejected: Int)) {
        recovered.increment(by: counts.recovered)
        duplicates.increment(by: counts.duplicates)
        rejected.increment(by: counts.rejected)
    }
}

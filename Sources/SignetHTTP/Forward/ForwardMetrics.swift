package import CoreMetrics
import SignetCore

/// What a `forward` sink did, per receiver (`target`, its URL), through whatever swift-metrics
/// backend is bootstrapped:
/// - `signet_forward_queued_total{sink,target}`: bodies put in the durable queue;
/// - `signet_forward_attempts_total{sink,target,result}`: sends, `result` one of `delivered`,
///   `retry` (will be sent again), `refused` (a 4xx other than 408/429: dead-lettered) and
///   `expired` (still failing past `max_age`: dead-lettered);
/// - `signet_forward_pending{sink,target}` and `signet_forward_oldest_pending_seconds{sink,target}`:
///   the queue's depth and the age of its oldest entry, as the deliverer last saw them.
package final class ForwardMetrics: Sendable {
    private let sink: String
    private let metrics: DimensionedMetrics

    /// Every `result` of `signet_forward_attempts_total`.
    static let results = ["delivered", "retry", "refused", "expired"]

    package init(sink: String, factory: any MetricsFactory = MetricsSystem.factory) {
        self.sink = sink
        metrics = DimensionedMetrics(factory: factory)
    }

    /// Makes every series of receiver `target` exist at 0 before anything happens to it:
    /// Prometheus' `increase()` reads a series born at 1 as no increase, so an alert on the
    /// first refusal would never fire.
    func register(target: String) {
        metrics.counter("signet_forward_queued_total", [("sink", sink), ("target", target)]).increment(by: 0)
        for result in Self.results {
            metrics.counter("signet_forward_attempts_total", [("sink", sink), ("target", target), ("result", result)]).increment(by: 0)
        }
    }

    func queued(_ count: Int, target: String) {
        metrics.counter("signet_forward_queued_total", [("sink", sink), ("target", target)]).increment(by: count)
    }

    func attempted(_ result: String, target: String, count: Int = 1) {
        guard count > 0 else { return }
        metrics.counter("signet_forward_attempts_total", [("sink", sink), ("target", target), ("result", result)]).increment(by: count)
    }

    func queue(pending: Int, oldestAgeSeconds: Double, target: String) {
        metrics.gauge("signet_forward_pending", [("sink", sink), ("target", target)]).record(pending)
        metrics.gauge("signet_forward_oldest_pending_seconds", [("sink", sink), ("target", target)]).record(oldestAgeSeconds)
    }
}

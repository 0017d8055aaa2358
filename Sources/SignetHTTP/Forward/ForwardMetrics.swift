public import CoreMetrics
import Synchronization

/// What a `forward` sink did, per receiver (`target`, its URL), through whatever swift-metrics
/// backend is bootstrapped:
/// - `signet_forward_queued_total{sink,target}`: bodies put in the durable queue;
/// - `signet_forward_attempts_total{sink,target,result}`: sends, `result` one of `delivered`,
///   `retry` (will be sent again), `refused` (a 4xx other than 408/429: dead-lettered) and
///   `expired` (still failing past `max_age`: dead-lettered);
/// - `signet_forward_pending{sink,target}` and `signet_forward_oldest_pending_seconds{sink,target}`:
///   the queue's depth and the age of its oldest entry, as the deliverer last saw them.
public final class ForwardMetrics: Sendable {
    private let factory: any MetricsFactory
    private let sink: String
    private let counters = Mutex([String: Counter]())
    private let gauges = Mutex([String: Gauge]())

    public init(sink: String, factory: any MetricsFactory = MetricsSystem.factory) {
        self.sink = sink
        self.factory = factory
    }

    func queued(_ count: Int, target: String) {
        counter("signet_forward_queued_total", [("target", target)]).increment(by: count)
    }

    func attempted(_ result: String, target: String, count: Int = 1) {
        guard count > 0 else { return }
        counter("signet_forward_attempts_total", [("target", target), ("result", result)]).increment(by: count)
    }

    func queue(pending: Int, oldestAgeSeconds: Double, target: String) {
        gauge("signet_forward_pending", target).record(pending)
        gauge("signet_forward_oldest_pending_seconds", target).record(oldestAgeSeconds)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        let all = [("sink", sink)] + dimensions
        let key = label + all.map { "\u{0}\($0.0)=\($0.1)" }.joined()
        return counters.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: all, factory: factory)
            table[key] = made
            return made
        }
    }

    private func gauge(_ label: String, _ target: String) -> Gauge {
        let key = label + "\u{0}" + target
        return gauges.withLock { table in
            if let existing = table[key] { return existing }
            let made = Gauge(label: label, dimensions: [("sink", sink), ("target", target)], factory: factory)
            table[key] = made
            return made
        }
    }
}

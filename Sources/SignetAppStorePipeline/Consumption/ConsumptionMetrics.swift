import Metrics

/// The responder's figures on /metrics. The oldest pending request's age is what an alert
/// fires on (docs/consumption.md): it grows past minutes only when answers stop going out.
struct ConsumptionMetrics: Sendable {
    private let answeredCount: Counter
    private let skippedCount: Counter
    private let lateCount: Counter
    private let failedCount: Counter
    private let retriedCount: Counter
    private let pending: Gauge
    private let oldestPendingAge: Gauge
    private let latency: Timer

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        func requests(_ outcome: String) -> Counter {
            Counter(label: "signet_consumption_requests_total", dimensions: [("outcome", outcome)], factory: factory)
        }
        answeredCount = requests("answered")
        skippedCount = requests("skipped_no_consent")
        lateCount = requests("late")
        failedCount = requests("failed")
        retriedCount = Counter(label: "signet_consumption_answer_retries_total", factory: factory)
        pending = Gauge(label: "signet_consumption_pending", factory: factory)
        oldestPendingAge = Gauge(label: "signet_consumption_oldest_pending_age_seconds", factory: factory)
        latency = Timer(label: "signet_consumption_answer_latency_seconds", preferredDisplayUnit: .seconds, factory: factory)
    }

    /// An answer Apple accepted, `milliseconds` after Signet stored the request.
    func answered(after milliseconds: Int64) {
        answeredCount.increment()
        latency.recordMilliseconds(max(0, milliseconds))
    }

    func skipped() { skippedCount.increment() }
    func late() { lateCount.increment() }
    func failed() { failedCount.increment() }
    func retried() { retriedCount.increment() }

    /// Requests not answered yet, and how long the oldest has waited since Signet stored it.
    func backlog(count: Int, oldestAgeMilliseconds: Int64?) {
        pending.record(count)
        oldestPendingAge.record(Double(max(0, oldestAgeMilliseconds ?? 0)) / 1000)
    }
}

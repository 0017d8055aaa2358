import Metrics

/// The round trips' figures on /metrics: the last successful one's time is what an alert
/// watches ("Apple has not reached us for two intervals").
struct DeliveryHealthMetrics: Sendable {
    private let successes: Counter
    private let failures: Counter
    private let lastSuccess: Gauge
    private let latency: Gauge
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        successes = Counter(label: "signet_delivery_round_trips_total", dimensions: [("result", "success")], factory: factory)
        failures = Counter(label: "signet_delivery_round_trips_total", dimensions: [("result", "failure")], factory: factory)
        lastSuccess = Gauge(label: "signet_delivery_round_trip_last_success_timestamp_seconds", factory: factory)
        latency = Gauge(label: "signet_delivery_round_trip_seconds", factory: factory)
    }

    /// The last success a previous run recorded (read from the state file at start).
    func restore(lastSuccess trip: DeliveryRoundTrip) {
        if let seen = trip.seenAt { lastSuccess.record(Double(seen) / 1000) }
    }

    func record(_ trip: DeliveryRoundTrip, newAttempts: [DeliveryRoundTrip.Attempt]) {
        for attempt in newAttempts {
            Counter(
                label: "signet_apple_send_attempts_total", dimensions: [("result", attempt.result ?? "UNKNOWN")], factory: factory
            ).increment()
        }
        switch trip.result {
        case .success:
            successes.increment()
            if let seen = trip.seenAt { lastSuccess.record(Double(seen) / 1000) }
            if let latency = trip.latency { self.latency.record(Double(latency) / 1000) }
        case .failure:
            failures.increment()
        case nil:
            break
        }
    }
}

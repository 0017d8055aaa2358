import CoreMetrics
import Foundation
public import Prometheus
import SignetAppStorePipeline
import SignetJWS

/// The process's Prometheus registry and the swift-metrics bootstrap that feeds it.
///
/// `MetricsSystem.bootstrap` may run once per process; ``bootstrap()`` may be called
/// any number of times. Everything that counts through swift-metrics' global factory
/// (the runner's `PipelineMetrics`, the verifier's cache, the state store, Kafka)
/// then shows on `/metrics`.
public enum PrometheusBackend {
    /// The registry `/metrics` renders.
    public static let registry = PrometheusCollectorRegistry()

    private static let bootstrapped: Bool = {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Apple delivers within seconds, retries over hours, and a backfill reaches back weeks.
        factory.durationHistogramBuckets[VerificationMonitor.signedDateLagLabel] = [
            .seconds(1), .seconds(5), .seconds(15), .seconds(60), .seconds(300), .seconds(900), .seconds(3_600),
            .seconds(6 * 3_600), .seconds(86_400), .seconds(3 * 86_400), .seconds(7 * 86_400), .seconds(30 * 86_400),
        ]
        factory.durationHistogramBuckets[RetentionMetrics.decisionLabel] = RetentionMetrics.decisionBuckets
        MetricsSystem.bootstrap(factory)
        return true
    }()

    /// Routes swift-metrics to ``registry`` (once per process).
    public static func bootstrap() {
        _ = bootstrapped
    }

    /// Publishes `signet_build_info{version="…"} 1`, so dashboards show what runs and an
    /// alert can tell "no data" from "no notifications".
    /// Also publishes `signet_process_start_time_seconds` (now, as seconds since 1970): the
    /// alert rules count a counter series born at its first event as an increase only for a
    /// process started within the alert's window (packaging/prometheus/signet-alerts.yml).
    public static func recordBuildInfo(version: String) {
        Gauge(label: "signet_build_info", dimensions: [("version", version)]).record(1)
        Gauge(label: "signet_process_start_time_seconds").record(Date().timeIntervalSince1970)
    }
}

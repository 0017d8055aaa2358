import CoreMetrics
public import Prometheus

/// The process's Prometheus registry and the swift-metrics bootstrap that feeds it.
///
/// `MetricsSystem.bootstrap` may run once per process; ``bootstrap()`` may be called
/// any number of times. Everything that counts through swift-metrics' global factory
/// (the runner's ``PipelineMetrics``, the verifier's cache, the state store, Kafka)
/// then shows on `/metrics`.
public enum PrometheusBackend {
    /// The registry `/metrics` renders.
    public static let registry = PrometheusCollectorRegistry()

    private static let bootstrapped: Bool = {
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return true
    }()

    /// Routes swift-metrics to ``registry`` (once per process).
    public static func bootstrap() {
        _ = bootstrapped
    }

    /// Publishes `signet_build_info{version="…"} 1`, so dashboards show what runs and an
    /// alert can tell "no data" from "no notifications".
    public static func recordBuildInfo(version: String) {
        Gauge(label: "signet_build_info", dimensions: [("version", version)]).record(1)
    }
}

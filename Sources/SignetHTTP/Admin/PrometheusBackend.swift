import CoreMetrics
import Prometheus

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
}

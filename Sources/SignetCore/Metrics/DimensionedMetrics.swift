package import CoreMetrics
import Synchronization

/// Counters and gauges made on first use, one per label and dimension values, then reused:
/// for metrics whose dimensions (a reason, a result, a receiver) are known only at run time.
package final class DimensionedMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex([String: Counter]())
    private let gauges = Mutex([String: Gauge]())

    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// The counter `label` with `dimensions`.
    package func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        let factory = self.factory
        return counters.withLock { table in
            Self.entry(in: &table, label, dimensions) { Counter(label: label, dimensions: dimensions, factory: factory) }
        }
    }

    /// The gauge `label` with `dimensions`.
    package func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        let factory = self.factory
        return gauges.withLock { table in
            Self.entry(in: &table, label, dimensions) { Gauge(label: label, dimensions: dimensions, factory: factory) }
        }
    }

    private static func entry<Metric>(
        in table: inout [String: Metric], _ label: String, _ dimensions: [(String, String)], make: () -> Metric
    ) -> Metric {
        let key = label + dimensions.map { "\u{0}\($0.0)=\($0.1)" }.joined()
        if let existing = table[key] { return existing }
        let made = make()
        table[key] = made
        return made
    }
}

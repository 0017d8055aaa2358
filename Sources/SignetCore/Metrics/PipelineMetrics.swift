public import CoreMetrics
import Metrics
import Synchronization

/// The runner's metrics, through swift-metrics (the API only): whoever runs the
/// pipeline picks the backend (`MetricsSystem.bootstrap`, or an explicit factory), and
/// without one every call is a no-op. Names follow Prometheus conventions; each is
/// listed with its meaning in docs/operations.md.
///
/// The runner updates counters once per batch (not per record), so the cost stays a few
/// atomic adds per batch. Only the runner records into them (the hooks are internal).
public final class PipelineMetrics: Sendable {
    private let factory: any MetricsFactory
    private let read: Counter
    private let passed: Counter
    private let inFlight: Meter
    private let batchDuration: Timer
    private let endToEnd: Timer
    private let rejected = Mutex([String: Counter]())
    private let dropped = Mutex([String: Counter]())
    private let deadLetters = Mutex([String: Counter]())
    private let events = Mutex([String: Counter]())
    private let sinkCounters = Mutex([String: SinkCounters]())

    /// The counters of one sink.
    private struct SinkCounters: Sendable {
        var deliveries: Counter
        var failures: Counter
        var retries: Counter
    }

    /// Metrics through `factory` (default: whatever `MetricsSystem` was bootstrapped with).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        read = Counter(label: "signet_records_read_total", factory: factory)
        passed = Counter(label: "signet_records_passed_total", factory: factory)
        inFlight = Meter(label: "signet_records_in_flight", factory: factory)
        batchDuration = Timer(label: "signet_batch_duration_seconds", factory: factory)
        endToEnd = Timer(label: "signet_end_to_end_latency_seconds", factory: factory)
    }

    /// Makes the rejection and dead-letter counters of `reasons` exist at 0: a counter born at
    /// its first event reads as no increase to Prometheus, so the first dead letter of a
    /// reason would never fire an alert.
    func registerReasons(_ reasons: Set<ReasonCode>) {
        for reason in reasons.map(\.rawValue) {
            counter(in: rejected, key: reason, label: "signet_records_rejected_total", [("reason", reason)]).increment(by: 0)
            counter(in: deadLetters, key: reason, label: "signet_dead_letters_total", [("reason", reason)]).increment(by: 0)
        }
    }

    /// Records taken from the source (they are in flight until committed).
    func recordsRead(_ count: Int) {
        read.increment(by: count)
        inFlight.increment(by: Double(count))
    }

    /// A batch committed: its source records leave flight, and its counts by outcome.
    func batchFinished(
        records: Int, passed passedCount: Int, rejectedByReason: [String: Int], droppedByReason: [String: Int]
    ) {
        inFlight.decrement(by: Double(records))
        if passedCount > 0 { passed.increment(by: passedCount) }
        for (reason, count) in rejectedByReason {
            counter(in: rejected, key: reason, label: "signet_records_rejected_total", [("reason", reason)])
                .increment(by: count)
            counter(in: deadLetters, key: reason, label: "signet_dead_letters_total", [("reason", reason)])
                .increment(by: count)
        }
        for (reason, count) in droppedByReason {
            counter(in: dropped, key: reason, label: "signet_records_dropped_total", [("reason", reason)])
                .increment(by: count)
        }
    }

    /// A message dead-lettered after the stages passed it (a sink refused it for good).
    func deadLettered(reason: String, count: Int = 1) {
        counter(in: deadLetters, key: reason, label: "signet_dead_letters_total", [("reason", reason)])
            .increment(by: count)
    }

    /// Events published, by the `signet-event-type` header of each output.
    func eventsPublished(_ countsByType: [String: Int]) {
        for (type, count) in countsByType {
            counter(in: events, key: type, label: "signet_events_total", [("type", type)]).increment(by: count)
        }
    }

    /// Messages a sink acknowledged.
    func sinkDelivered(_ sink: String, count: Int) {
        counters(for: sink).deliveries.increment(by: count)
    }

    /// A failed write to a sink; `willRetry` says whether the runner tries again.
    func sinkFailed(_ sink: String, willRetry: Bool) {
        let counters = counters(for: sink)
        counters.failures.increment()
        if willRetry { counters.retries.increment() }
    }

    /// From a batch's first read to its commit.
    func batchDuration(_ duration: Duration) {
        batchDuration.recordNanoseconds(duration.clampedNanoseconds)
    }

    /// From the source's own timestamp of a record to its commit, in milliseconds.
    func endToEndLatency(milliseconds: Int64) {
        endToEnd.recordMilliseconds(max(0, milliseconds))
    }

    private func counters(for sink: String) -> SinkCounters {
        sinkCounters.withLock { table in
            if let existing = table[sink] { return existing }
            let dimensions = [("sink", sink)]
            let made = SinkCounters(
                deliveries: Counter(label: "signet_sink_deliveries_total", dimensions: dimensions, factory: factory),
                failures: Counter(label: "signet_sink_failures_total", dimensions: dimensions, factory: factory),
                retries: Counter(label: "signet_sink_retries_total", dimensions: dimensions, factory: factory))
            table[sink] = made
            return made
        }
    }

    private func counter(
        in table: borrowing Mutex<[String: Counter]>, key: String, label: String, _ dimensions: [(String, String)]
    ) -> Counter {
        table.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: dimensions, factory: factory)
            table[key] = made
            return made
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating instead of trapping.
    public var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// The duration in whole milliseconds (what Apple's dates, SQLite's busy timeout and
    /// librdkafka count in), saturating instead of trapping.
    public var clampedMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAdding) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflowAdding ? (seconds < 0 ? .min : .max) : total
    }
}

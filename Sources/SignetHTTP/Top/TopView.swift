import Foundation

/// What `signet top` shows of a running instance: rates between two scrapes of its /metrics
/// and the gauges an operator looks at first, as plain text lines (like `vector top`).
package struct TopView: Sendable {
    package let previous: MetricsSnapshot
    package let current: MetricsSnapshot
    /// Wall clock of the current scrape (seconds since 1970), for ages of timestamps.
    package let now: Double

    package init(previous: MetricsSnapshot, current: MetricsSnapshot, now: Double) {
        self.previous = previous
        self.current = current
        self.now = now
    }

    /// Per second between the two scrapes (nil: the metric is not exported).
    func rate(_ name: String, matching: [String: String] = [:]) -> Double? {
        guard let after = current.total(name, matching: matching) else { return nil }
        let before = previous.total(name, matching: matching) ?? 0
        let seconds = current.at - previous.at
        return seconds > 0 ? max(0, after - before) / seconds : nil
    }

    /// Per-label rates, the busiest first.
    func rates(_ name: String, by label: String) -> [(String, Double)] {
        let seconds = current.at - previous.at
        guard seconds > 0 else { return [] }
        let before = previous.totals(name, by: label)
        return current.totals(name, by: label)
            .map { ($0.key, max(0, $0.value - (before[$0.key] ?? 0)) / seconds) }
            .sorted { ($0.1, $1.0) > ($1.1, $0.0) }
    }

    /// Average of a histogram (`_sum` / `_count`) between the scrapes, in ms.
    func averageMilliseconds(_ name: String) -> Double? {
        guard let sum = rate(name + "_sum"), let count = rate(name + "_count"), count > 0 else { return nil }
        return sum / count * 1000
    }

    /// The screen: one line each, sections only for what the instance exports.
    package func lines(source: String) -> [String] {
        func number(_ value: Double?) -> String {
            guard let value else { return "-" }
            return value >= 100 || value == value.rounded() ? String(format: "%.0f", value) : String(format: "%.1f", value)
        }
        func total(_ name: String) -> String { number(current.total(name)) }
        var lines = [
            "signet top — \(source)   every \(String(format: "%.1f", current.at - previous.at)) s   (Ctrl-C quits)",
            "",
            "PIPELINE            per second      total",
            "  read              \(pad(number(rate("signet_records_read_total"))))\(total("signet_records_read_total"))",
            "  passed            \(pad(number(rate("signet_records_passed_total"))))\(total("signet_records_passed_total"))",
            "  rejected          \(pad(number(rate("signet_records_rejected_total"))))\(total("signet_records_rejected_total"))",
            "  dropped           \(pad(number(rate("signet_records_dropped_total"))))\(total("signet_records_dropped_total"))",
            "  events out        \(pad(number(rate("signet_events_total"))))\(total("signet_events_total"))",
            "  dead-lettered     \(pad(number(rate("signet_dead_letters_total"))))\(total("signet_dead_letters_total"))",
            "  in flight         \(total("signet_records_in_flight"))",
            "  batch             \(averageMilliseconds("signet_batch_duration_seconds").map { String(format: "%.1f ms", $0) } ?? "-") average",
        ]
        let reasons = rates("signet_records_rejected_total", by: "reason").filter { $0.1 > 0 }.prefix(5)
        if !reasons.isEmpty {
            lines += ["", "REJECTED BY REASON"] + reasons.map { "  \($0.0.padding(toLength: 30, withPad: " ", startingAt: 0))\(number($0.1))/s" }
        }
        let events = rates("signet_events_total", by: "type").filter { $0.1 > 0 }.prefix(6)
        if !events.isEmpty {
            lines += ["", "EVENTS BY TYPE"] + events.map { "  \($0.0.padding(toLength: 30, withPad: " ", startingAt: 0))\(number($0.1))/s" }
        }
        if let failures = current.total("signet_sink_failures_total"), failures > 0 {
            lines += ["", "SINKS", "  failures          \(pad(number(rate("signet_sink_failures_total"))))\(number(failures))"]
        }
        if let lag = current.maximum("signet_kafka_consumer_lag") {
            lines += ["", "KAFKA", "  largest partition lag  \(number(lag))"]
        }
        if let last = current.total("signet_delivery_round_trip_last_success_timestamp_seconds") {
            let age = last > 0 ? "\(number(now - last)) s ago" : "never"
            lines += [
                "", "DELIVERY HEALTH", "  last round trip   \(age), took \(number(current.total("signet_delivery_round_trip_seconds"))) s",
                "  failures          \(number(current.total("signet_delivery_round_trips_total", matching: ["result": "failure"])))",
            ]
        }
        let queues = current.totals("signet_forward_pending", by: "target")
        if !queues.isEmpty {
            lines += ["", "FORWARDING          queued   oldest     sent/s   retries/s   given up"]
            for target in queues.keys.sorted() {
                let receiver = ["target": target]
                func attempts(_ result: String) -> [String: String] { receiver.merging(["result": result]) { $1 } }
                let givenUp = (current.total("signet_forward_attempts_total", matching: attempts("refused")) ?? 0)
                    + (current.total("signet_forward_attempts_total", matching: attempts("expired")) ?? 0)
                lines += [
                    "  \(target)",
                    "                    \(number(queues[target]).padding(toLength: 9, withPad: " ", startingAt: 0))"
                        + "\((number(current.total("signet_forward_oldest_pending_seconds", matching: receiver)) + " s").padding(toLength: 11, withPad: " ", startingAt: 0))"
                        + "\(number(rate("signet_forward_attempts_total", matching: attempts("delivered"))).padding(toLength: 9, withPad: " ", startingAt: 0))"
                        + "\(number(rate("signet_forward_attempts_total", matching: attempts("retry"))).padding(toLength: 12, withPad: " ", startingAt: 0))"
                        + number(givenUp),
                ]
            }
        }
        if let pending = current.total("signet_consumption_pending") {
            lines += [
                "", "REFUND QUESTIONS",
                "  pending           \(number(pending)), oldest \(number(current.total("signet_consumption_oldest_pending_age_seconds"))) s",
                "  answered          \(number(current.total("signet_consumption_requests_total", matching: ["outcome": "answered"])))",
            ]
        }
        return lines
    }

    private func pad(_ text: String) -> String { text.padding(toLength: 16, withPad: " ", startingAt: 0) }
}

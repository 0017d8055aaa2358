import Foundation

/// One scrape of a running Signet's /metrics (Prometheus text format), read for `signet top`.
package struct MetricsSnapshot: Sendable {
    /// One sample: its labels and value.
    package struct Sample: Sendable, Hashable {
        package var labels: [String: String]
        package var value: Double
    }

    /// Samples by metric name (the `_bucket`, `_sum`, `_count` series of a histogram under their own names).
    package private(set) var samples: [String: [Sample]] = [:]
    /// When it was taken (seconds, any monotonic origin), for rates between two snapshots.
    package var at: Double

    /// Parses `text`; lines it cannot read are skipped (a newer Signet may add shapes).
    package init(text: String, at: Double) {
        self.at = at
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            var name = Substring(series)
            var labels: [String: String] = [:]
            if let brace = series.firstIndex(of: "{"), series.last == "}" {
                name = series[..<brace]
                labels = Self.labels(series[series.index(after: brace)..<series.index(before: series.endIndex)])
            }
            samples[String(name), default: []].append(Sample(labels: labels, value: value))
        }
    }

    /// `a="x",b="y"` (values may hold escaped quotes and commas).
    private static func labels(_ text: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        var rest = text
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: [",", " "])
            var index = rest.index(after: equals)
            guard index < rest.endIndex, rest[index] == "\"" else { break }
            index = rest.index(after: index)
            var value = ""
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\", rest.index(after: index) < rest.endIndex { index = rest.index(after: index) }
                value.append(rest[index])
                index = rest.index(after: index)
            }
            labels[name] = value
            rest = index < rest.endIndex ? rest[rest.index(after: index)...] : ""
        }
        return labels
    }

    /// The sum of `name`'s samples (whose labels include `matching`); nil when it has none.
    package func total(_ name: String, matching: [String: String] = [:]) -> Double? {
        let matched = (samples[name] ?? []).filter { sample in matching.allSatisfy { sample.labels[$0.key] == $0.value } }
        return matched.isEmpty ? nil : matched.reduce(0) { $0 + $1.value }
    }

    /// `name`'s values summed per value of `label`.
    package func totals(_ name: String, by label: String) -> [String: Double] {
        var totals: [String: Double] = [:]
        for sample in samples[name] ?? [] { totals[sample.labels[label] ?? "", default: 0] += sample.value }
        return totals
    }

    /// The largest of `name`'s samples.
    package func maximum(_ name: String) -> Double? { samples[name]?.map(\.value).max() }
}

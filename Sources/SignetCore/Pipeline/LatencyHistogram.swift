/// End-to-end latency of committed records: from the moment the source says the input was
/// written (a Kafka message's timestamp) to its commit, after every sink acknowledged.
/// Only sources that know when their input was written report it.
public struct LatencySummary: Sendable, Codable, Equatable {
    /// Records measured.
    public var count: Int
    /// The median.
    public var p50Milliseconds: Int64
    /// The 90th percentile.
    public var p90Milliseconds: Int64
    /// The 99th percentile.
    public var p99Milliseconds: Int64
    /// The slowest.
    public var maxMilliseconds: Int64
}

/// Counts latencies in fixed buckets: exact to the millisecond below one second, then
/// powers of two, so memory is constant however long the run and a percentile is at
/// most one bucket off.
struct LatencyHistogram: Sendable {
    private static let exactLimit: Int64 = 1024
    private var exact = [Int](repeating: 0, count: Int(exactLimit))
    /// Bucket k holds [2^(k+10), 2^(k+11)) ms.
    private var coarse = [Int](repeating: 0, count: 53)
    private(set) var count = 0
    private var maximum: Int64 = 0

    /// Adds one latency; a negative one (the writer's clock ahead of ours) counts as zero.
    mutating func record(_ milliseconds: Int64) {
        let value = max(0, milliseconds)
        count += 1
        maximum = max(maximum, value)
        if value < Self.exactLimit {
            exact[Int(value)] += 1
        } else {
            coarse[min(coarse.count - 1, (Int64.bitWidth - 1 - value.leadingZeroBitCount) - 10)] += 1
        }
    }

    /// The smallest latency that at least `fraction` of the records did not exceed (for a
    /// coarse bucket, its upper end, capped at the maximum seen).
    func percentile(_ fraction: Double) -> Int64 {
        guard count > 0 else { return 0 }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (value, hits) in exact.enumerated() where hits > 0 {
            seen += hits
            if seen >= rank { return Int64(value) }
        }
        for (bucket, hits) in coarse.enumerated() where hits > 0 {
            seen += hits
            if seen >= rank { return min(maximum, (Int64(1) << (bucket + 11)) - 1) }
        }
        return maximum
    }

    var summary: LatencySummary? {
        guard count > 0 else { return nil }
        return LatencySummary(
            count: count, p50Milliseconds: percentile(0.50), p90Milliseconds: percentile(0.90),
            p99Milliseconds: percentile(0.99), maxMilliseconds: maximum)
    }
}

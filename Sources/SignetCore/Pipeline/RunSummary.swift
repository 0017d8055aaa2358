/// Counts of one run, for the final report, progress lines and tests.
public struct RunSummary: Sendable, Codable, Equatable, CustomStringConvertible {
    /// Records the source delivered (redelivered outbox entries not included).
    public var read = 0
    /// Records that passed every stage.
    public var passed = 0
    /// Records sent to the dead-letter sink.
    public var rejected = 0
    /// Records finished on purpose without output (duplicates, ...).
    public var dropped = 0
    /// Messages delivered to sinks (a message routed to two sinks counts twice).
    public var delivered = 0
    /// Messages from an earlier run's outbox delivered at start-up.
    public var redelivered = 0
    /// Rejected records by reason code.
    public var rejectedByReason: [String: Int] = [:]
    /// Dropped records by reason (`duplicate`, …).
    public var droppedByReason: [String: Int] = [:]
    /// Messages delivered, by sink name.
    public var deliveredBySink: [String: Int] = [:]
    /// Seconds since the run started.
    public var elapsedSeconds: Double = 0
    /// Source timestamp to commit, for sources that know when their input was written
    /// (Kafka); nil otherwise.
    public var latency: LatencySummary?

    /// No records yet.
    public init() {}

    /// Adds another summary's counts (not its elapsed time).
    public mutating func add(_ other: RunSummary) {
        read += other.read
        passed += other.passed
        rejected += other.rejected
        dropped += other.dropped
        delivered += other.delivered
        redelivered += other.redelivered
        rejectedByReason.merge(other.rejectedByReason, uniquingKeysWith: +)
        droppedByReason.merge(other.droppedByReason, uniquingKeysWith: +)
        deliveredBySink.merge(other.deliveredBySink, uniquingKeysWith: +)
    }

    /// Records read a second over the run so far.
    public var recordsPerSecond: Double { elapsedSeconds > 0 ? Double(read) / elapsedSeconds : 0 }

    public var description: String {
        var text = "\(read) read, \(passed) passed, \(rejected) rejected, \(dropped) dropped, \(delivered) delivered"
        if redelivered > 0 { text += ", \(redelivered) redelivered from the outbox" }
        text += " in \(String(format2: elapsedSeconds)) s (\(Int(recordsPerSecond.rounded()))/s)"
        if let latency {
            text += "; latency p50 \(latency.p50Milliseconds) ms, p99 \(latency.p99Milliseconds) ms, max \(latency.maxMilliseconds) ms"
        }
        if !rejectedByReason.isEmpty {
            text += "; rejected: " + rejectedByReason.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        if !droppedByReason.isEmpty {
            text += "; dropped: " + droppedByReason.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        return text
    }
}

extension String {
    /// Two decimals without Foundation's locale machinery.
    init(format2 value: Double) {
        let hundredths = Int64((value * 100).rounded())
        let fraction = abs(hundredths % 100)
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

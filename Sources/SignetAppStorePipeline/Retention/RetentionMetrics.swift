import Metrics
import SignetCore
import SignetJWS

/// The retention endpoint's figures on /metrics:
/// `signet_retention_requests_total{result, reason}` (result `answered` with the rule's name,
/// `default` with its reason, `refused` with the reason code, `replayed` with what the first
/// answer was) and
/// `signet_retention_decision_seconds`, from the body read to the answer ready. Every series
/// the configuration can produce exists at 0 from the start, so `rate()` sees the first one.
package struct RetentionMetrics: Sendable {
    /// The decision histogram's label (its buckets reach down to a millisecond).
    package static let decisionLabel = "signet_retention_decision_seconds"
    /// Apple's threshold is about 700 ms; the target is tens of milliseconds.
    package static let decisionBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .milliseconds(700), .seconds(1), .seconds(2.5),
    ]

    /// Every series the configuration can produce, made up front (read-only after).
    private let counters: [String: Counter]
    private let decision: Timer

    init(rules: [String], factory: any MetricsFactory = MetricsSystem.factory) {
        var counters: [String: Counter] = [:]
        func add(_ result: String, _ reason: String) {
            counters["\(result)/\(reason)"] = Counter(
                label: "signet_retention_requests_total", dimensions: [("result", result), ("reason", reason)], factory: factory)
        }
        for rule in rules { add("answered", rule) }
        for reason in RetentionDefaultReason.allCases { add("default", reason.rawValue) }
        for reason in Self.refusals { add("refused", reason.rawValue) }
        for first in ["answered", "default"] { add("replayed", first) }
        self.counters = counters
        decision = Timer(label: Self.decisionLabel, preferredDisplayUnit: .seconds, factory: factory)
    }

    /// What a request is refused for: the verifier's reasons and the body's.
    static let refusals: [ReasonCode] = [
        .malformedJSON, .missingSignedPayload, .malformedJWS, .unsupportedAlgorithm, .unsupportedHeader, .invalidX5C,
        .invalidCertificateChain, .missingAppleOID, .certificateNotValidAtSignedDate, .signedDateInFuture, .invalidSignature,
        .malformedPayload, .environmentMismatch, .appAppleIdMismatch,
    ]

    func record(_ reply: RetentionResponder.Reply, seconds: Double) {
        let key = "\(reply.result)/\(reply.reason)"
        // A reason not foreseen (a new reason code) is counted all the same: the factory hands
        // back the same series for the same labels.
        let counter = counters[key]
            ?? Counter(label: "signet_retention_requests_total", dimensions: [("result", reply.result), ("reason", reply.reason)])
        counter.increment()
        decision.recordNanoseconds(Int64(seconds * 1e9))
    }
}

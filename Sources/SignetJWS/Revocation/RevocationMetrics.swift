public import CoreMetrics
import SignetCore

/// What online revocation checking did (docs/operations.md), through whatever swift-metrics
/// backend is bootstrapped (a no-op without one):
/// - `signet_revocation_checks_total{result}`: certificates judged by `verify`, `result` one of
///   `good`, `revoked`, `accepted_in_grace` (a failure `soft` let through) or a failure class
///   (``RevocationFailure/name``: `unreachable`, `try_later`, ...);
/// - `signet_revocation_cache_hits_total`: answers the checker's cache gave without a request;
/// - `signet_revocation_responder_seconds`: how long each OCSP exchange took, failures included;
/// - `signet_revocation_crl_fetches_total{result}`: CRLs fetched because OCSP gave no answer,
///   `result` one of `good`, `revoked` or a failure class.
public final class RevocationMetrics: Sendable {
    /// The counters by result, made on first use.
    private let byResult: DimensionedMetrics
    private let cacheHits: Counter
    private let responderLatency: Timer

    /// The metrics, registered with `factory` (the bootstrapped `MetricsSystem` by default).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        byResult = DimensionedMetrics(factory: factory)
        cacheHits = Counter(label: "signet_revocation_cache_hits_total", factory: factory)
        responderLatency = Timer(label: "signet_revocation_responder_seconds", preferredDisplayUnit: .seconds, factory: factory)
    }

    /// The results a check ends with whatever the responders do; failure classes appear when
    /// they first happen.
    static let judgedResults = ["good", "revoked", "accepted_in_grace"]

    /// Makes the judged results' series exist at 0 once checking is on, so the first revoked
    /// answer is an increase Prometheus sees (a series born at 1 is none).
    func registerChecks() {
        for result in Self.judgedResults { byResult.counter("signet_revocation_checks_total", [("result", result)]).increment(by: 0) }
    }

    /// Counts an answer the checker's cache gave.
    func cacheHit() { cacheHits.increment() }

    /// Records how long one OCSP exchange took.
    func responded(after duration: Duration) {
        responderLatency.recordNanoseconds(duration.clampedNanoseconds)
    }

    /// Counts one CRL fetched and read with `result`.
    func crlFetched(_ result: String) { count("signet_revocation_crl_fetches_total", result) }

    /// Counts one certificate judged with `result`.
    func checked(_ result: String) { count("signet_revocation_checks_total", result) }

    private func count(_ label: String, _ result: String) {
        byResult.counter(label, [("result", result)]).increment()
    }
}

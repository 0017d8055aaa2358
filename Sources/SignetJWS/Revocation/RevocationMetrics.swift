public import CoreMetrics
import SignetCore
import Synchronization

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
    private let factory: any MetricsFactory
    /// Counters by label and result, made on first use.
    private let counters = Mutex([String: Counter]())
    private let cacheHits: Counter
    private let responderLatency: Timer

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        cacheHits = Counter(label: "signet_revocation_cache_hits_total", factory: factory)
        responderLatency = Timer(label: "signet_revocation_responder_seconds", preferredDisplayUnit: .seconds, factory: factory)
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
        let key = label + "\u{0}" + result
        let counter = counters.withLock { table in
            if let existing = table[key] { return existing }
            let made = Counter(label: label, dimensions: [("result", result)], factory: factory)
            table[key] = made
            return made
        }
        counter.increment()
    }
}

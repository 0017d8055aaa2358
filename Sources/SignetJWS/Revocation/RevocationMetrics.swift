public import CoreMetrics
import Synchronization

/// What online revocation checking did (docs/operations.md), through whatever swift-metrics
/// backend is bootstrapped (a no-op without one):
/// - `signet_revocation_checks_total{result}`: certificates judged by `verify`, `result` one of
///   `good`, `revoked`, `accepted_in_grace` (a failure `soft` let through) or a failure class
///   (``RevocationFailure/name``: `unreachable`, `try_later`, ...);
/// - `signet_revocation_cache_hits_total`: answers the checker's cache gave without a request;
/// - `signet_revocation_responder_seconds`: how long each OCSP exchange took, failures included.
public final class RevocationMetrics: Sendable {
    private let factory: any MetricsFactory
    private let checks = Mutex([String: Counter]())
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
        let (seconds, attoseconds) = duration.components
        responderLatency.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Counts one certificate judged with `result`.
    func checked(_ result: String) {
        let counter = checks.withLock { table in
            if let existing = table[result] { return existing }
            let made = Counter(label: "signet_revocation_checks_total", dimensions: [("result", result)], factory: factory)
            table[result] = made
            return made
        }
        counter.increment()
    }
}

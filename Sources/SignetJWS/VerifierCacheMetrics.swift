import CoreMetrics

/// Hits and misses of the verifier's header and chain caches
/// (`signet_verifier_cache_hits_total{cache}`, `signet_verifier_cache_misses_total{cache}`)
/// and the key tables built (`signet_verifier_key_tables_total`), through whatever
/// swift-metrics backend is bootstrapped (a no-op without one).
struct VerifierCacheMetrics: Sendable {
    let headerHits = Counter(label: "signet_verifier_cache_hits_total", dimensions: [("cache", "header")])
    let headerMisses = Counter(label: "signet_verifier_cache_misses_total", dimensions: [("cache", "header")])
    let chainHits = Counter(label: "signet_verifier_cache_hits_total", dimensions: [("cache", "chain")])
    let chainMisses = Counter(label: "signet_verifier_cache_misses_total", dimensions: [("cache", "chain")])
    let keyTables = Counter(label: "signet_verifier_key_tables_total")
}

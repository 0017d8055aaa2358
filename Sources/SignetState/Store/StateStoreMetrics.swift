import CoreMetrics

/// `signet_state_commit_duration_seconds{store}`: one state-store transaction, from
/// BEGIN to a durable COMMIT (the fsync dominates), or to its failure (a lock waited out),
/// through swift-metrics.
enum StateStoreMetrics {
    static let sqliteCommit = Timer(label: "signet_state_commit_duration_seconds", dimensions: [("store", "sqlite")])
}

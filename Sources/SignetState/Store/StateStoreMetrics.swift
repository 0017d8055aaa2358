import CoreMetrics

/// `signet_state_commit_duration_seconds{store}`: one state-store transaction, from
/// BEGIN to a durable COMMIT (the fsync dominates), or to its failure (a lock waited out),
/// through swift-metrics.
enum StateStoreMetrics {
    /// Created on first use: ``SQLiteStateStore`` touches it when a writable store opens, so
    /// its series exist at 0 before the first commit. A series born with that commit in it is
    /// invisible to `rate()`, and a store stuck from its very first transaction (the first
    /// commit the slow one) would never fire SignetStateCommitSlow.
    static let sqliteCommit = Timer(label: "signet_state_commit_duration_seconds", dimensions: [("store", "sqlite")])
}

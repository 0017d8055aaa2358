/// The dedupe keys of the inputs already handled (`dedupe`, `transition`, delivery health).
package protocol DedupeKeyStore: AnyObject, Sendable {
    /// Which of `keys` were recorded (and not yet expired by retention) and are handled:
    /// their outbox rows were delivered, or are being delivered by this process. A key whose
    /// events another process committed but never delivered (it crashed) is not handled;
    /// `transition` redelivers those events.
    func containedKeys(_ keys: [String]) throws -> Set<String>
    /// Records dedupe keys on their own (the `dedupe` stage without `transition`).
    func recordKeys(_ keys: [String], seenAt: Int64) throws
}

/// Dedupe keys inside a transaction.
package protocol DedupeKeyTransaction {
    /// Announces, before anything else in the transaction, every dedupe key and purchase
    /// (originalTransactionId) a batch may read or write. A store may read them all at once
    /// instead of one round trip each, and a shared store locks the purchases here in one
    /// fixed order, so two instances whose batches overlap wait for each other instead of
    /// deadlocking. Optional: every other call stays correct for keys and purchases not
    /// announced. The default does nothing (an embedded store gains nothing from it).
    func prefetch(keys: [String], originalTransactionIds: [String]) throws
    /// Whether a dedupe key was recorded (committed earlier or in this transaction).
    func containsKey(_ key: String) throws -> Bool
    /// Records a dedupe key.
    func recordKey(_ key: String, seenAt: Int64) throws
}

extension DedupeKeyTransaction {
    package func prefetch(keys: [String], originalTransactionIds: [String]) throws {}
}

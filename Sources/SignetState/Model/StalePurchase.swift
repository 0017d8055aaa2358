/// A subscription whose period ended although Signet expected it to renew
/// (`StateStore/staleSubscriptions(endedAfter:endedBefore:after:limit:)`): what
/// `appstore_reconcile` asks Apple about, in the store the purchase was made in.
package struct StalePurchase: Sendable, Hashable {
    package var originalTransactionId: String
    /// The end of the period that passed without a renewal (ms since 1970).
    package var periodEnd: Int64
    /// The environment its notifications came from (`Production`, `Sandbox`), nil when the
    /// store has none recorded.
    package var environment: String?

    package init(originalTransactionId: String, periodEnd: Int64, environment: String?) {
        self.originalTransactionId = originalTransactionId
        self.periodEnd = periodEnd
        self.environment = environment
    }
}

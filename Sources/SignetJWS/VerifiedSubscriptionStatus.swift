/// Apple's current status of one purchase (an item of Get All Subscription Statuses'
/// `lastTransactions`) whose transaction and renewal info both verified and belong to the
/// same purchase, environment and app.
public final class VerifiedSubscriptionStatus: Sendable {
    /// The purchase's latest transaction (`signedTransactionInfo`), verified.
    public let transaction: VerifiedTransaction
    /// Its renewal info (`signedRenewalInfo`), verified.
    public let renewalInfo: VerifiedRenewalInfo
    /// Apple's `status` number as the input gave it (outside the signatures: informative only;
    /// the state is derived from the signed transaction and renewal info).
    public let status: Int?

    // Not public: only the verifier makes one. Package: the test fixtures build one unsigned.
    package init(transaction: VerifiedTransaction, renewalInfo: VerifiedRenewalInfo, status: Int?) {
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.status = status
    }
}

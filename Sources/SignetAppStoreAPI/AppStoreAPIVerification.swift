public import AppStoreModels
public import SignetJWS
public import SignetCore

// Verified views of what the API returns. Every signed string goes through the webhook's own
// verifier (chain to the configured root, Apple's OIDs, bundle id, environment): an answer
// over TLS from Apple's host is still no reason to trust a payload.

extension NotificationHistoryItem {
    /// The notification, verified.
    public func verified(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedNotification {
        try verifier.verifyNotification(signedPayload)
    }
}

extension TestNotificationStatusResponse {
    /// The TEST notification, verified; nil when Apple sent no payload.
    public func verifiedNotification(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedNotification? {
        guard let signedPayload else { return nil }
        return try verifier.verifyNotification(signedPayload)
    }
}

extension LastTransaction {
    /// The latest transaction, verified; nil when absent.
    public func verifiedTransaction(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedTransaction? {
        guard let signedTransactionInfo else { return nil }
        return try verifier.verifyTransaction(signedTransactionInfo)
    }

    /// The renewal info, verified; nil when absent.
    public func verifiedRenewalInfo(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedRenewalInfo? {
        guard let signedRenewalInfo else { return nil }
        return try verifier.verifyRenewalInfo(signedRenewalInfo)
    }
}

extension TransactionInfoResponse {
    /// The transaction, verified.
    public func verified(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedTransaction {
        try verifier.verifyTransaction(signedTransactionInfo)
    }
}

extension TransactionLookup {
    /// The transaction, verified. Use a verifier of ``environment``: a Sandbox id found by
    /// the fallback does not pass a Production verifier.
    public func verified(by verifier: AppStoreVerifier) throws(RecordRejection) -> VerifiedTransaction {
        try verifier.verifyTransaction(signedTransactionInfo)
    }
}

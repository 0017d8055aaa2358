import AppStoreModels

/// What a notification does to the refund questions kept for its transaction, apart from any
/// state: CONSUMPTION_REQUEST adds a pending request (once: Apple may send it again), and
/// REFUND, REFUND_DECLINED and REFUND_REVERSED tell the outcome of the one they answer. Pure;
/// `transition` stores the result in the same transaction as the notification's state changes,
/// so a request is never lost between its commit and its answer.
enum ConsumptionRequestRule {
    /// The transaction whose requests `input` can change, nil when it changes none (read the
    /// kept ones only then: every other notification costs nothing).
    static func transactionId(concernedBy input: TransitionInput) -> String? {
        guard input.source == .notification, let type = input.notificationType,
            type == .consumptionRequest || outcome(of: type) != nil
        else { return nil }
        return input.transaction?.transactionId
    }

    /// The record to save for `input`, given those `kept` for its transaction; nil when it
    /// changes none (a repeat is counted on the request it repeats).
    static func apply(_ input: TransitionInput, to kept: [ConsumptionRequestRecord], now: Int64) -> ConsumptionRequestRecord? {
        guard let type = input.notificationType, let transaction = input.transaction, let transactionId = transaction.transactionId else {
            return nil
        }
        let signed = input.signedDate?.millisecondsSince1970 ?? now
        if type == .consumptionRequest {
            if var asked = kept.first(where: { $0.covers(requestSignedAt: signed) || $0.requestedAt == signed }) {
                // The same notification again is dedupe's; a new one within the window is Apple asking twice.
                guard asked.notificationUUID != input.notificationUUID else { return nil }
                asked.repeats += 1
                return asked
            }
            return ConsumptionRequestRecord(
                transactionId: transactionId, originalTransactionId: transaction.originalTransactionId,
                productId: transaction.productId, productType: transaction.type?.rawValue,
                appAccountToken: transaction.parsedAppAccountToken, bundleId: input.bundleId ?? transaction.bundleId,
                environment: input.environment?.rawValue ?? transaction.environment?.rawValue,
                reason: input.consumptionRequestReason?.rawValue, advancedCommerce: transaction.advancedCommerceInfo != nil,
                notificationUUID: input.notificationUUID, requestedAt: signed, receivedAt: now)
        }
        guard let outcome = outcome(of: type),
            var asked = kept.filter({ $0.requestedAt <= signed }).max(by: { $0.requestedAt < $1.requestedAt })
        else { return nil }
        // Delivered out of order: the later decision stands.
        if let known = asked.outcomeAt, known > signed { return nil }
        asked.outcome = outcome
        asked.outcomeAt = signed
        asked.outcomeNotificationUUID = input.notificationUUID
        return asked
    }

    private static func outcome(of type: NotificationType) -> ConsumptionRequestRecord.Outcome? {
        switch type {
        case .refund: .refunded
        case .refundDeclined: .declined
        case .refundReversed: .reversed
        default: nil
        }
    }
}

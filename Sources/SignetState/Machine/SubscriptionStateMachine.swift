import AppStoreModels
import SignetCore

/// The per-`originalTransactionId` state machine: merges one verified input into the
/// stored snapshot and says which entitlement-change events that causes.
///
/// State is a function of the newest facts, never of arrival order: the transaction of
/// the current period is the one with the latest purchaseDate (the newest signedDate of
/// it wins), the renewal info is the one with the latest signedDate, and the derivation
/// instant is the latest signedDate seen. A late, older notification therefore changes
/// nothing, while a refund or revoke of the current period's transaction (always signed
/// later) applies whenever it arrives. Pure and deterministic: a replay gives the same
/// snapshot and the same events (including their ids). docs/state-machine.md has the table.
public enum SubscriptionStateMachine {
    /// What applying one input did.
    public enum Outcome: Sendable, Equatable {
        /// Nothing to do for a purchase (TEST, EXTERNAL_PURCHASE_TOKEN, RENEWAL_EXTENSION summaries, ...).
        case ignored
        /// Bad input: goes to the dead-letter sink.
        case rejected(RecordRejection)
        /// The new snapshot (nil: none exists or it is unchanged) and the events to publish.
        case applied(snapshot: SubscriptionSnapshot?, events: [EntitlementEvent])
    }

    /// Reason code for an undocumented notification type when the policy rejects them.
    public static let unknownTypeReason = ReasonCode.unknownNotificationType

    /// Notification types that concern no single purchase.
    static let purchaseIndependentTypes: Set<NotificationType> = [
        .test, .externalPurchaseToken, .renewalExtension, .rescindConsent,
    ]

    /// Applies `input` to `previous` (nil: the purchase is new to Signet).
    public static func apply(_ input: TransitionInput, to previous: SubscriptionSnapshot?, policy: TransitionPolicy) -> Outcome {
        if input.source == .notification {
            guard let type = input.notificationType, type.isDocumented else {
                if policy.rejectUnknownTypes {
                    return .rejected(RecordRejection(
                        unknownTypeReason, "notificationType '\(input.notificationType?.rawValue ?? "<none>")' is not documented"))
                }
                return .applied(snapshot: nil, events: [unknownEvent(input, previous: previous)])
            }
            if purchaseIndependentTypes.contains(type) { return .ignored }
        } else if input.source == .appTransaction, !policy.entitleOnAppTransaction {
            return .ignored
        }
        guard let originalTransactionId = input.originalTransactionId, !originalTransactionId.isEmpty else {
            return .rejected(RecordRejection(
                .missingTransaction,
                "\(input.notificationType?.rawValue ?? input.source.rawValue) carries no transaction or renewal info with an originalTransactionId"))
        }
        // Renewal info alone cannot say what was bought; wait for a transaction.
        if previous == nil, input.transaction == nil { return .ignored }

        var next = merge(input, into: previous ?? SubscriptionSnapshot(originalTransactionId: originalTransactionId))
        (next.state, next.entitled) = derive(next, at: next.evaluatedAt, policy: policy)
        let events = events(from: previous, to: next, input: input)
        return .applied(snapshot: next == previous ? nil : next, events: events)
    }

    /// The state and entitlement of `snapshot` at `instant` under `policy`.
    ///
    /// Used for events (at the newest signedDate) and for queries (at the current time).
    public static func derive(_ snapshot: SubscriptionSnapshot, at instant: Int64, policy: TransitionPolicy) -> (SubscriptionState, Bool) {
        let periodCurrent = snapshot.isPeriodCurrent(at: instant)
        let state: SubscriptionState
        if snapshot.revocationDate != nil {
            state = snapshot.revocationType == RevocationType.familyRevoke.rawValue ? .revoked : .refunded
        } else {
            switch snapshot.productType.map(TransactionType.init(rawValue:)) {
            case .consumable?: state = .consumed
            case .nonConsumable?: state = .owned
            case .nonRenewingSubscription?: state = periodCurrent ? .active : .expired
            default:
                if billingRetryApplies(snapshot) {
                    let graceEnds = snapshot.gracePeriodExpiresDate ?? Int64.min
                    state = graceEnds > instant ? .gracePeriod : .billingRetry
                } else {
                    state = periodCurrent ? .active : .expired
                }
            }
        }
        var entitled: Bool
        switch state {
        case .active, .owned, .consumed: entitled = true
        case .gracePeriod: entitled = policy.gracePeriodEntitled || (snapshot.expiresDate != nil && periodCurrent)
        case .billingRetry: entitled = policy.billingRetryEntitled || (snapshot.expiresDate != nil && periodCurrent)
        case .expired, .refunded, .revoked: entitled = false
        }
        if snapshot.ownership == InAppOwnershipType.familyShared.rawValue, !policy.familySharedEntitled {
            entitled = false
        }
        return (state, entitled)
    }

    /// Billing retry counts only when the renewal info saying so is not older than the
    /// current period (a renewal after a failure starts a clean period).
    private static func billingRetryApplies(_ snapshot: SubscriptionSnapshot) -> Bool {
        guard snapshot.isInBillingRetryPeriod == true else { return false }
        guard let purchase = snapshot.purchaseDate, let renewalSigned = snapshot.renewalSignedDate else { return true }
        return renewalSigned >= purchase
    }

    // MARK: Merging

    private static func merge(_ input: TransitionInput, into previous: SubscriptionSnapshot) -> SubscriptionSnapshot {
        var next = previous
        let inputSigned = input.signedDate?.millisecondsSince1970
        let evidence = [inputSigned, input.transaction?.signedDate?.millisecondsSince1970,
                        input.renewalInfo?.signedDate?.millisecondsSince1970].compactMap { $0 }.max()
        let isNewest = (evidence ?? Int64.min) >= previous.evaluatedAt
        next.evaluatedAt = max(previous.evaluatedAt, evidence ?? previous.evaluatedAt)

        var adoptedTransaction = false
        if let transaction = input.transaction, shouldAdopt(transaction, over: previous, inputSigned: inputSigned) {
            adopt(transaction, into: &next, input: input)
            adoptedTransaction = true
        }
        if let renewal = input.renewalInfo {
            let signed = renewal.signedDate?.millisecondsSince1970 ?? inputSigned ?? Int64.min
            if previous.renewalSignedDate.map({ signed > $0 }) ?? true {
                next.autoRenewEnabled = renewal.autoRenewStatus.map { $0 == .on }
                next.autoRenewProductId = renewal.autoRenewProductId
                next.isInBillingRetryPeriod = renewal.isInBillingRetryPeriod
                next.gracePeriodExpiresDate = renewal.gracePeriodExpiresDate?.millisecondsSince1970
                next.expirationIntent = renewal.expirationIntent.map { Int64($0.rawValue) }
                next.renewalSignedDate = signed
                if next.appAccountToken == nil { next.appAccountToken = renewal.appAccountToken }
                if next.environment == nil { next.environment = renewal.environment?.rawValue }
            }
        }
        // EXPIRED / GRACE_PERIOD_EXPIRED about the current period say it is over even if
        // Apple signed them a moment before the boundary: derive at the boundary then.
        let aboutCurrent = input.transaction?.transactionId == nil || input.transaction?.transactionId == next.transactionId
        if isNewest, aboutCurrent, input.source == .notification {
            if input.notificationType == .expired, let expires = next.expiresDate {
                next.evaluatedAt = max(next.evaluatedAt, expires)
            } else if input.notificationType == .gracePeriodExpired, let graceEnds = next.gracePeriodExpiresDate {
                next.evaluatedAt = max(next.evaluatedAt, graceEnds)
            }
        }
        if isNewest || adoptedTransaction, input.source == .notification {
            next.lastNotificationType = input.notificationType?.rawValue
            next.lastSubtype = input.subtype?.rawValue
            next.lastNotificationUUID = input.notificationUUID
        }
        return next
    }

    /// Whether `transaction` is newer evidence about the current period than what the
    /// snapshot holds: a later period (purchaseDate), or the same transaction signed later.
    private static func shouldAdopt(_ transaction: JWSTransactionDecodedPayload, over snapshot: SubscriptionSnapshot, inputSigned: Int64?) -> Bool {
        guard let current = snapshot.transactionId else { return true }
        let signed = transaction.signedDate?.millisecondsSince1970 ?? inputSigned ?? Int64.min
        let currentSigned = snapshot.transactionSignedDate ?? Int64.min
        if transaction.transactionId == current { return signed > currentSigned }
        let purchase = transaction.purchaseDate?.millisecondsSince1970 ?? Int64.min
        let currentPurchase = snapshot.purchaseDate ?? Int64.min
        if purchase != currentPurchase { return purchase > currentPurchase }
        return signed > currentSigned
    }

    private static func adopt(_ transaction: JWSTransactionDecodedPayload, into next: inout SubscriptionSnapshot, input: TransitionInput) {
        let inputSigned = input.signedDate?.millisecondsSince1970
        next.transactionId = transaction.transactionId
        next.productId = transaction.productId ?? next.productId
        next.productType = transaction.type?.rawValue ?? next.productType
        next.bundleId = transaction.bundleId ?? input.bundleId ?? next.bundleId
        next.environment = transaction.environment?.rawValue ?? input.environment?.rawValue ?? next.environment
        next.appAccountToken = transaction.appAccountToken ?? next.appAccountToken
        next.ownership = transaction.inAppOwnershipType?.rawValue ?? next.ownership
        next.purchaseDate = transaction.purchaseDate?.millisecondsSince1970
        next.expiresDate = transaction.expiresDate?.millisecondsSince1970
        next.transactionSignedDate = transaction.signedDate?.millisecondsSince1970 ?? inputSigned
        next.revocationDate = transaction.revocationDate?.millisecondsSince1970
        next.revocationReason = transaction.revocationReason.map { Int64($0.rawValue) }
        next.revocationType = transaction.revocationType?.rawValue
        // A REFUND or REVOKE whose transaction lacks revocationDate still ends access.
        if next.revocationDate == nil, input.source == .notification,
           input.notificationType == .refund || input.notificationType == .revoke {
            next.revocationDate = inputSigned ?? transaction.signedDate?.millisecondsSince1970 ?? 0
        }
        if next.revocationDate != nil, next.revocationType == nil, input.notificationType == .revoke {
            next.revocationType = RevocationType.familyRevoke.rawValue
        }
    }

    // MARK: Events

    private static func events(from previous: SubscriptionSnapshot?, to next: SubscriptionSnapshot, input: TransitionInput) -> [EntitlementEvent] {
        var types: [EntitlementEventType] = []
        if let previous, previous.state == next.state {
            if previous.transactionId != next.transactionId {
                types.append(previous.productId != next.productId ? .productChanged : .renewed)
            } else if previous.productId != next.productId {
                types.append(.productChanged)
            } else if let expires = next.expiresDate, let before = previous.expiresDate, expires > before {
                types.append(.extended)
            } else if previous.entitled != next.entitled {
                types.append(.entitlementChanged)
            }
        } else {
            switch next.state {
            case .refunded: types.append(.refunded)
            case .revoked: types.append(.revoked)
            case .expired: types.append(.expired)
            case .gracePeriod: types.append(.gracePeriodEntered)
            case .billingRetry: types.append(.billingRetryEntered)
            case .active, .owned, .consumed:
                switch previous?.state {
                case .refunded?, .revoked?: types.append(.restored)
                case .gracePeriod?, .billingRetry?: types.append(.recovered)
                default: types.append(.granted)
                }
            }
        }
        if let previous {
            if let before = previous.autoRenewEnabled, let after = next.autoRenewEnabled, before != after {
                types.append(after ? .autoRenewEnabled : .autoRenewDisabled)
            }
            if let before = previous.autoRenewProductId, let after = next.autoRenewProductId, before != after,
               !types.contains(.productChanged) {
                types.append(.renewalPreferenceChanged)
            }
        }
        if input.source == .notification, input.notificationType == .consumptionRequest {
            types.append(.consumptionRequested)
        }
        return types.enumerated().map { ordinal, type in
            event(type, ordinal: ordinal, snapshot: next, previousState: previous?.state, input: input)
        }
    }

    private static func event(
        _ type: EntitlementEventType, ordinal: Int, snapshot: SubscriptionSnapshot,
        previousState: SubscriptionState?, input: TransitionInput
    ) -> EntitlementEvent {
        EntitlementEvent(
            eventId: EventIdentifier.make(
                originalTransactionId: snapshot.originalTransactionId, source: input.sourceIdentity,
                type: type.rawValue, ordinal: ordinal),
            type: type,
            entitled: snapshot.entitled,
            previousState: previousState,
            state: snapshot.state,
            originalTransactionId: snapshot.originalTransactionId,
            transactionId: snapshot.transactionId,
            productId: snapshot.productId,
            productType: snapshot.productType,
            bundleId: snapshot.bundleId,
            environment: snapshot.environment,
            appAccountToken: snapshot.appAccountToken,
            expiresDate: snapshot.expiresDate,
            gracePeriodExpiresDate: snapshot.gracePeriodExpiresDate,
            autoRenewEnabled: snapshot.autoRenewEnabled,
            ownership: snapshot.ownership,
            revocationDate: snapshot.revocationDate,
            revocationReason: snapshot.revocationReason,
            revocationType: snapshot.revocationType,
            source: input.source,
            notificationType: input.notificationType?.rawValue,
            subtype: input.subtype?.rawValue,
            notificationUUID: input.notificationUUID,
            signedDate: input.signedDate?.millisecondsSince1970)
    }

    /// An undocumented notification type: surfaced with the purchase's current state, unchanged.
    private static func unknownEvent(_ input: TransitionInput, previous: SubscriptionSnapshot?) -> EntitlementEvent {
        let transaction = input.transaction
        let otid = previous?.originalTransactionId ?? input.originalTransactionId
        return EntitlementEvent(
            eventId: EventIdentifier.make(
                originalTransactionId: otid ?? "-", source: input.sourceIdentity,
                type: EntitlementEventType.unknownNotification.rawValue, ordinal: 0),
            type: .unknownNotification,
            entitled: previous?.entitled ?? false,
            previousState: previous?.state,
            state: previous?.state,
            originalTransactionId: otid,
            transactionId: previous?.transactionId ?? transaction?.transactionId,
            productId: previous?.productId ?? transaction?.productId,
            productType: previous?.productType ?? transaction?.type?.rawValue,
            bundleId: previous?.bundleId ?? transaction?.bundleId ?? input.bundleId,
            environment: previous?.environment ?? transaction?.environment?.rawValue ?? input.environment?.rawValue,
            appAccountToken: previous?.appAccountToken ?? transaction?.appAccountToken,
            expiresDate: previous?.expiresDate ?? transaction?.expiresDate?.millisecondsSince1970,
            gracePeriodExpiresDate: previous?.gracePeriodExpiresDate,
            autoRenewEnabled: previous?.autoRenewEnabled,
            ownership: previous?.ownership ?? transaction?.inAppOwnershipType?.rawValue,
            revocationDate: previous?.revocationDate,
            revocationReason: previous?.revocationReason,
            revocationType: previous?.revocationType,
            source: input.source,
            notificationType: input.notificationType?.rawValue,
            subtype: input.subtype?.rawValue,
            notificationUUID: input.notificationUUID,
            signedDate: input.signedDate?.millisecondsSince1970)
    }
}

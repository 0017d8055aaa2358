import AppStoreModels
public import SignetCore

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
    package static let unknownTypeReason = ReasonCode.unknownNotificationType

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
        // A purchase belongs to one environment. Apple's ids do not repeat across them, so this
        // guards a pipeline that takes both (`environment: [Production, Sandbox]`): a Sandbox
        // record never changes a Production purchase, nor the other way round.
        if let stored = previous?.environment,
           let claimed = (input.transaction?.environment ?? input.renewalInfo?.environment ?? input.environment)?.rawValue,
           stored != claimed
        {
            return .rejected(RecordRejection(
                .environmentConflict,
                "purchase \(originalTransactionId) is stored as a \(stored) purchase; this \(claimed) \(input.notificationType?.rawValue ?? input.source.rawValue) does not change it"))
        }

        let base = previous ?? SubscriptionSnapshot(originalTransactionId: originalTransactionId)
        var next = merge(input, into: base, policy: policy)
        (next.state, next.entitled) = derive(next, at: next.evaluatedAt, policy: policy)
        let events = events(from: previous, to: next, cause: EventCause(input))
        return .applied(snapshot: next == previous ? nil : next, events: events)
    }

    /// Moves `snapshot` across every time boundary (end of the period, end of the grace
    /// period) at or before `cutoff` that no input crossed, in order, and says what each
    /// crossing changed: the expiry sweep. The state is derived AT each boundary, and the event
    /// ids come from the purchase, the period's transaction and the boundary, so the result
    /// does not depend on when the sweep runs, and a second sweep finds nothing left to cross.
    /// A crossing that changes nothing still moves ``SubscriptionSnapshot/evaluatedAt``.
    public static func advance(
        _ snapshot: SubscriptionSnapshot, through cutoff: Int64, policy: TransitionPolicy
    ) -> (snapshot: SubscriptionSnapshot, events: [EntitlementEvent]) {
        var current = snapshot
        var events: [EntitlementEvent] = []
        // nextBoundary is strictly after evaluatedAt, so every step moves forward; the bound is a guard.
        for _ in 0..<8 {
            guard let boundary = current.nextBoundary, boundary <= cutoff else { break }
            var next = current
            next.evaluatedAt = boundary
            (next.state, next.entitled) = derive(next, at: boundary, policy: policy)
            events += Self.events(from: current, to: next, cause: EventCause(boundary: boundary, transactionId: next.transactionId))
            current = next
        }
        return (current, events)
    }

    /// The state and entitlement of `snapshot` at `instant` under `policy`.
    ///
    /// Used for events (at the newest signedDate) and for queries (at the current time).
    public static func derive(_ snapshot: SubscriptionSnapshot, at instant: Int64, policy: TransitionPolicy) -> (SubscriptionState, Bool) {
        let periodCurrent = snapshot.isPeriodCurrent(at: instant)
        let state: SubscriptionState
        if snapshot.migratedToOriginalTransactionId != nil {
            // Whatever arrives about it later (a renewal signed before the migration, a refund of
            // an old period), access comes from the purchase it moved to.
            state = .migrated
        } else if snapshot.revocationDate != nil {
            // Access taken away (Family Sharing, an organization's seat) is `revoked`; a full or
            // prorated refund, or an unknown type, `refunded`.
            state = snapshot.revocationType.map { RevocationType(rawValue: $0).isAccessRevocation } == true ? .revoked : .refunded
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
        case .gracePeriod: entitled = policy.gracePeriodEntitled || (snapshot.periodEnd != nil && periodCurrent)
        case .billingRetry: entitled = policy.billingRetryEntitled || (snapshot.periodEnd != nil && periodCurrent)
        case .expired, .refunded, .revoked, .migrated: entitled = false
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

    /// Ends the purchase `previousId` because `successor` names it as its
    /// `previousOriginalTransactionId` (MIGRATION): `previous` becomes `migrated`, naming the
    /// successor, with a `migrated` event caused by the successor's input. Nil when there is
    /// nothing to change: the link exists, or the two purchases are of different environments
    /// (Apple's ids do not repeat across them, so that is no migration).
    ///
    /// A purchase Signet never saw is recorded all the same, already `migrated` and without an
    /// event, so its own notifications, arriving later, cannot grant what the successor grants.
    static func migrate(
        _ previous: SubscriptionSnapshot?, previousId: String, to successor: SubscriptionSnapshot, input: TransitionInput,
        policy: TransitionPolicy
    ) -> (snapshot: SubscriptionSnapshot, events: [EntitlementEvent])? {
        guard previous?.migratedToOriginalTransactionId != successor.originalTransactionId else { return nil }
        if let stored = previous?.environment, let claimed = successor.environment, stored != claimed { return nil }
        guard var next = previous else {
            var placeholder = SubscriptionSnapshot(originalTransactionId: previousId, state: .migrated, entitled: false)
            placeholder.migratedToOriginalTransactionId = successor.originalTransactionId
            placeholder.environment = successor.environment
            placeholder.bundleId = successor.bundleId
            return (placeholder, [])
        }
        next.migratedToOriginalTransactionId = successor.originalTransactionId
        next.evaluatedAt = max(next.evaluatedAt, successor.evaluatedAt)
        (next.state, next.entitled) = derive(next, at: next.evaluatedAt, policy: policy)
        return (next, events(from: previous, to: next, cause: EventCause(input)))
    }

    // MARK: Merging

    private static func merge(_ input: TransitionInput, into previous: SubscriptionSnapshot, policy: TransitionPolicy) -> SubscriptionSnapshot {
        var next = previous
        let inputSigned = input.signedDate?.millisecondsSince1970
        let evidence = [inputSigned, input.transaction?.signedDate?.millisecondsSince1970,
                        input.renewalInfo?.signedDate?.millisecondsSince1970].compactMap { $0 }.max()
        let isNewest = (evidence ?? Int64.min) >= previous.evaluatedAt
        next.evaluatedAt = max(previous.evaluatedAt, evidence ?? previous.evaluatedAt)

        var adoptedTransaction = false
        if let transaction = input.transaction, shouldAdopt(transaction, over: previous, inputSigned: inputSigned) {
            adopt(transaction, into: &next, input: input, policy: policy)
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
                next.renewalDate = renewal.renewalDate?.millisecondsSince1970
                // Kept when a renewal info omits it (older payloads): the run it started goes on.
                next.recentSubscriptionStartDate = renewal.recentSubscriptionStartDate?.millisecondsSince1970
                    ?? next.recentSubscriptionStartDate
                next.renewalSignedDate = signed
                if next.appAccountToken == nil { next.appAccountToken = renewal.parsedAppAccountToken }
                if next.appTransactionId == nil { next.appTransactionId = renewal.appTransactionId }
                if next.environment == nil { next.environment = renewal.environment?.rawValue }
            }
        }
        // EXPIRED / GRACE_PERIOD_EXPIRED about the current period say it is over even if
        // Apple signed them a moment before the boundary: derive at the boundary then.
        let aboutCurrent = input.transaction?.transactionId == nil || input.transaction?.transactionId == next.transactionId
        if isNewest, aboutCurrent, input.source == .notification {
            if input.notificationType == .expired, let expires = next.periodEnd {
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

    private static func adopt(
        _ transaction: JWSTransactionDecodedPayload, into next: inout SubscriptionSnapshot, input: TransitionInput, policy: TransitionPolicy
    ) {
        let inputSigned = input.signedDate?.millisecondsSince1970
        next.transactionId = transaction.transactionId
        next.productId = transaction.productId ?? next.productId
        next.productType = transaction.type?.rawValue ?? next.productType
        next.subscriptionGroupIdentifier = transaction.subscriptionGroupIdentifier ?? next.subscriptionGroupIdentifier
        next.bundleId = transaction.bundleId ?? input.bundleId ?? next.bundleId
        next.environment = transaction.environment?.rawValue ?? input.environment?.rawValue ?? next.environment
        next.appAccountToken = transaction.parsedAppAccountToken ?? next.appAccountToken
        next.appTransactionId = transaction.appTransactionId ?? next.appTransactionId
        next.ownership = transaction.inAppOwnershipType?.rawValue ?? next.ownership
        next.purchaseDate = transaction.purchaseDate?.millisecondsSince1970
        next.expiresDate = transaction.expiresDate?.millisecondsSince1970
        next.expiresDateSource = nil
        // Apple documents expiresDate for auto-renewable subscriptions only: a non-renewing one
        // ends when the configured duration says, or at no known time.
        if next.expiresDate == nil, transaction.type == .nonRenewingSubscription, let purchase = next.purchaseDate,
           let duration = policy.nonRenewingDurations.milliseconds(for: next.productId) {
            let (end, overflow) = purchase.addingReportingOverflow(duration)
            next.expiresDate = overflow ? Int64.max : end
            next.expiresDateSource = "duration_policy"
        }
        next.transactionSignedDate = transaction.signedDate?.millisecondsSince1970 ?? inputSigned
        next.revocationDate = transaction.revocationDate?.millisecondsSince1970
        next.revocationReason = transaction.revocationReason.map { Int64($0.rawValue) }
        next.revocationType = transaction.revocationType?.rawValue
        next.revocationPercentage = transaction.revocationPercentage.map(Int64.init)
        if let previous = transaction.previousOriginalTransactionId, !previous.isEmpty, previous != next.originalTransactionId {
            next.previousOriginalTransactionId = previous
        }
        // A REFUND naming a transaction that Apple's own signed status and renewal info show is
        // not the current period (a renewal Signet never saw): the refund ends that older
        // period, not the subscription. The renewal info's renewalDate then carries the period.
        if refundsEarlierPeriod(transaction, input: input) {
            next.revocationDate = nil
            next.revocationReason = nil
            next.revocationType = nil
            next.revocationPercentage = nil
            return
        }
        // A REFUND or REVOKE whose transaction lacks revocationDate still ends access.
        if next.revocationDate == nil, input.source == .notification,
           input.notificationType == .refund || input.notificationType == .revoke {
            next.revocationDate = inputSigned ?? transaction.signedDate?.millisecondsSince1970 ?? 0
        }
        if next.revocationDate != nil, next.revocationType == nil, input.notificationType == .revoke {
            next.revocationType = RevocationType.familyRevoke.rawValue
        }
    }

    /// Whether a REFUND's transaction is an earlier period than the one Apple says is current:
    /// the notification's signed `data.status` is not revoked, and its renewal info (signed
    /// with it) says the most recent purchase expires after the refunded transaction does.
    static func refundsEarlierPeriod(_ transaction: JWSTransactionDecodedPayload, input: TransitionInput) -> Bool {
        guard input.source == .notification, input.notificationType == .refund,
              let status = input.status, status != .revoked,
              let refundedEnd = transaction.expiresDate?.millisecondsSince1970,
              let renewalDate = input.renewalInfo?.renewalDate?.millisecondsSince1970
        else { return false }
        return renewalDate > refundedEnd
    }

    // MARK: Events

    private static func events(from previous: SubscriptionSnapshot?, to next: SubscriptionSnapshot, cause: EventCause) -> [EntitlementEvent] {
        var types: [EntitlementEventType] = []
        // A migrated purchase stays so: what arrives about it later is kept, and says nothing new.
        if previous?.state == .migrated, next.state == .migrated { return [] }
        let productChanged = previous.map { $0.productId != nil && next.productId != nil && $0.productId != next.productId } ?? false
        if let previous, previous.state == next.state {
            if previous.transactionId != next.transactionId {
                types.append(productChanged ? .productChanged : .renewed)
            } else if productChanged {
                types.append(.productChanged)
            } else if let end = next.periodEnd, let before = previous.periodEnd, end > before {
                // The transaction's own expiry moved (RENEWAL_EXTENDED), or only the renewal
                // info's renewalDate did: a later purchase whose transaction Signet never saw.
                let transactionLater = (next.expiresDate ?? Int64.min) > (previous.expiresDate ?? Int64.min)
                types.append(transactionLater ? .extended : .renewed)
            } else if previous.entitled != next.entitled {
                types.append(.entitlementChanged)
            }
        } else {
            types.append(stateChange(from: previous?.state, to: next.state, cause: cause))
            // A new product together with a new state (upgrade during grace, resubscribe to
            // another product) says both.
            if productChanged { types.append(.productChanged) }
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
        if cause.source == .notification, cause.notificationType == NotificationType.consumptionRequest.rawValue {
            types.append(.consumptionRequested)
        }
        return types.enumerated().map { ordinal, type in
            event(type, ordinal: ordinal, snapshot: next, previousState: previous?.state, cause: cause)
        }
    }

    /// The event for a change of state. `restored` is for REFUND_REVERSED only: any other way
    /// back to access after a refund, a revoke or an expiry (a new paid period, family access
    /// shared again) is `granted`.
    private static func stateChange(from previous: SubscriptionState?, to next: SubscriptionState, cause: EventCause) -> EntitlementEventType {
        switch next {
        case .refunded: return .refunded
        case .revoked: return .revoked
        case .migrated: return .migrated
        case .expired: return .expired
        case .gracePeriod: return .gracePeriodEntered
        case .billingRetry: return .billingRetryEntered
        case .active, .owned, .consumed:
            switch previous {
            case .gracePeriod?, .billingRetry?: return .recovered
            case .refunded?, .revoked?: return cause.isRefundReversal ? .restored : .granted
            default: return .granted
            }
        }
    }

    private static func event(
        _ type: EntitlementEventType, ordinal: Int, snapshot: SubscriptionSnapshot,
        previousState: SubscriptionState?, cause: EventCause
    ) -> EntitlementEvent {
        EntitlementEvent(
            eventId: EventIdentifier.make(
                originalTransactionId: snapshot.originalTransactionId, source: cause.identity,
                type: type.rawValue, ordinal: ordinal),
            type: type,
            entitled: snapshot.entitled,
            previousState: previousState,
            state: snapshot.state,
            originalTransactionId: snapshot.originalTransactionId,
            transactionId: snapshot.transactionId,
            productId: snapshot.productId,
            productType: snapshot.productType,
            subscriptionGroupIdentifier: snapshot.subscriptionGroupIdentifier,
            bundleId: snapshot.bundleId,
            environment: snapshot.environment,
            appAccountToken: snapshot.appAccountToken,
            appTransactionId: snapshot.appTransactionId,
            expiresDate: snapshot.periodEnd,
            expiresDateSource: snapshot.periodEndSource,
            gracePeriodExpiresDate: snapshot.gracePeriodExpiresDate,
            autoRenewEnabled: snapshot.autoRenewEnabled,
            ownership: snapshot.ownership,
            revocationDate: snapshot.revocationDate,
            revocationReason: snapshot.revocationReason,
            revocationType: snapshot.revocationType,
            revocationPercentage: snapshot.revocationPercentage,
            previousOriginalTransactionId: snapshot.previousOriginalTransactionId,
            migratedToOriginalTransactionId: snapshot.migratedToOriginalTransactionId,
            source: cause.source,
            notificationType: cause.notificationType,
            subtype: cause.subtype,
            notificationUUID: cause.notificationUUID,
            signedDate: cause.signedDate)
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
            subscriptionGroupIdentifier: previous?.subscriptionGroupIdentifier ?? transaction?.subscriptionGroupIdentifier,
            bundleId: previous?.bundleId ?? transaction?.bundleId ?? input.bundleId,
            environment: previous?.environment ?? transaction?.environment?.rawValue ?? input.environment?.rawValue,
            appAccountToken: previous?.appAccountToken ?? transaction?.parsedAppAccountToken,
            appTransactionId: previous?.appTransactionId ?? input.appTransactionId,
            expiresDate: previous?.periodEnd ?? transaction?.expiresDate?.millisecondsSince1970,
            expiresDateSource: previous?.periodEndSource,
            gracePeriodExpiresDate: previous?.gracePeriodExpiresDate,
            autoRenewEnabled: previous?.autoRenewEnabled,
            ownership: previous?.ownership ?? transaction?.inAppOwnershipType?.rawValue,
            revocationDate: previous?.revocationDate,
            revocationReason: previous?.revocationReason,
            revocationType: previous?.revocationType,
            revocationPercentage: previous?.revocationPercentage,
            previousOriginalTransactionId: previous?.previousOriginalTransactionId,
            migratedToOriginalTransactionId: previous?.migratedToOriginalTransactionId,
            source: input.source,
            notificationType: input.notificationType?.rawValue,
            subtype: input.subtype?.rawValue,
            notificationUUID: input.notificationUUID,
            signedDate: input.signedDate?.millisecondsSince1970)
    }
}

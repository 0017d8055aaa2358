import AppStoreModels
import SignetCore

/// What an input does to the consent restriction of the app download it names
/// (`appTransactionId`), apart from any purchase: RESCIND_CONSENT restricts, a later
/// notification about the same app transaction lifts the restriction. Pure; `transition`
/// stores the result in the same transaction as the input's state changes.
///
/// Apple sends RESCIND_CONSENT "when a parent or guardian withdraws consent for a child's use of
/// the app" and asks developers to restrict access (App Store Server Notifications 2.18,
/// developer.apple.com/documentation/appstoreservernotifications/notificationtype).
enum ConsentRule {
    /// The restriction to store and the app-level event it causes.
    struct Change: Equatable {
        var restriction: ConsentRestriction
        var event: EntitlementEvent
    }

    /// The change `input` makes to `stored` (the restriction of `input.appTransactionId`, if
    /// any), nil when it makes none; throws for a RESCIND_CONSENT that names no app transaction.
    static func apply(_ input: TransitionInput, to stored: ConsentRestriction?) throws(RecordRejection) -> Change? {
        guard input.source == .notification else { return nil }
        let signed = input.signedDate?.millisecondsSince1970 ?? 0
        if input.notificationType == .rescindConsent {
            guard let appTransactionId = input.appTransactionId, !appTransactionId.isEmpty else {
                throw RecordRejection(
                    .missingTransaction,
                    "RESCIND_CONSENT carries no appData.signedAppTransactionInfo with an appTransactionId: no purchase can be restricted")
            }
            if let stored {
                // Already restricted, or lifted by something newer than this rescind.
                if stored.isInForce { return nil }
                if let cleared = stored.clearedAt, cleared >= signed { return nil }
            }
            let restriction = ConsentRestriction(
                appTransactionId: appTransactionId, bundleId: input.bundleId ?? input.appTransaction?.bundleId,
                environment: input.appTransaction?.receiptType?.rawValue ?? input.environment?.rawValue,
                rescindedAt: signed, notificationUUID: input.notificationUUID)
            return Change(restriction: restriction, event: event(.consentRescinded, restriction, input: input))
        }
        // A notification signed after the rescind about the same download of the app lifts it.
        guard var restriction = stored, restriction.isInForce, signed > restriction.rescindedAt else { return nil }
        restriction.clearedAt = signed
        restriction.clearedBy = "notification \(input.notificationUUID ?? input.notificationType?.rawValue ?? "")"
        return Change(restriction: restriction, event: event(.consentCleared, restriction, input: input))
    }

    /// An app-level event: no purchase, so no state; `entitled` is false (nothing is granted by it).
    private static func event(_ type: EntitlementEventType, _ restriction: ConsentRestriction, input: TransitionInput) -> EntitlementEvent {
        EntitlementEvent(
            eventId: EventIdentifier.make(
                originalTransactionId: "app:\(restriction.appTransactionId)", source: input.sourceIdentity, type: type.rawValue,
                ordinal: 0),
            type: type, entitled: false, previousState: nil, state: nil, originalTransactionId: nil,
            transactionId: nil, productId: nil, productType: nil, subscriptionGroupIdentifier: nil, bundleId: restriction.bundleId,
            environment: restriction.environment, appAccountToken: input.transaction?.parsedAppAccountToken,
            appTransactionId: restriction.appTransactionId, expiresDate: nil, expiresDateSource: nil,
            gracePeriodExpiresDate: nil, autoRenewEnabled: nil, ownership: nil, revocationDate: nil, revocationReason: nil,
            revocationType: nil, source: input.source, notificationType: input.notificationType?.rawValue,
            subtype: input.subtype?.rawValue, notificationUUID: input.notificationUUID,
            signedDate: input.signedDate?.millisecondsSince1970)
    }
}

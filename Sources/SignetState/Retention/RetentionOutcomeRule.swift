import AppStoreModels

/// Which notifications tell whether a customer shown a retention answer stayed.
///
/// Apple sends no "retention outcome"; what the customer did arrives as the purchase's
/// ordinary notifications. The earliest one Apple signed after the answer decides (a later
/// change of mind is the next request's outcome):
///
/// | Notification | Outcome |
/// |---|---|
/// | DID_CHANGE_RENEWAL_STATUS AUTO_RENEW_ENABLED | kept |
/// | DID_CHANGE_RENEWAL_STATUS AUTO_RENEW_DISABLED | lost |
/// | DID_CHANGE_RENEWAL_PREF (switched plan) | kept |
/// | OFFER_REDEEMED | kept |
/// | DID_RENEW | kept |
/// | EXPIRED (any subtype) | lost |
package enum RetentionOutcomeRule {
    /// The outcome `input` tells of; nil when it says nothing of one.
    package static func outcome(of input: TransitionInput) -> RetentionOutcome? {
        guard input.source == .notification, let type = input.notificationType,
            let signedAt = input.signedDate?.millisecondsSince1970
        else { return nil }
        let kept: Bool
        switch type {
        case .didChangeRenewalStatus:
            switch input.subtype {
            case .autoRenewEnabled?: kept = true
            case .autoRenewDisabled?: kept = false
            default: return nil
            }
        case .didChangeRenewalPref, .offerRedeemed, .didRenew: kept = true
        case .expired: kept = false
        default: return nil
        }
        return RetentionOutcome(kept: kept, notificationType: type.rawValue, subtype: input.subtype?.rawValue, signedAt: signedAt)
    }
}

import Foundation

/// "Why": one sentence that explains a purchase's current access from the state machine's
/// view of it, for the person answering the customer (the console, `signet support customer`).
///
/// For example "In billing retry since 2 Dec 2026, access kept by the grace period until
/// 8 Dec 2026." Dates are UTC.
package enum AccessExplanation {
    /// The sentence for `snapshot` as of `now` (ms since 1970), with what else bears on it: a
    /// consent restriction in force, and a renewal-date extension Apple granted whose
    /// notification has not arrived yet (its new expiry).
    package static func sentence(
        for snapshot: SubscriptionSnapshot, restriction: ConsentRestriction? = nil, pendingExtension: Int64? = nil, now: Int64
    ) -> String {
        var sentence = access(snapshot, now: now)
        if let pendingExtension, pendingExtension > (snapshot.periodEnd ?? 0) {
            sentence += " A renewal-date extension to \(day(pendingExtension)) is pending: Apple's RENEWAL_EXTENDED has not arrived yet."
        }
        if let restriction, restriction.isInForce {
            sentence += " The customer withdrew consent on \(day(restriction.rescindedAt)): no refund question about them is answered."
        }
        return sentence
    }

    private static func access(_ snapshot: SubscriptionSnapshot, now: Int64) -> String {
        let end = snapshot.periodEnd
        switch snapshot.state {
        case .active:
            guard let end else { return "Active." }
            guard snapshot.productType == "Auto-Renewable Subscription" else { return "Active until \(day(end))." }
            switch snapshot.autoRenewEnabled {
            case true?:
                let next = snapshot.autoRenewProductId.flatMap { $0 == snapshot.productId ? nil : $0 }
                return "Active, paid through \(day(end)); renews automatically\(next.map { " (as \($0))" } ?? "")."
            case false?:
                return "Active, paid through \(day(end)); will not renew: the customer turned auto-renew off."
            case nil:
                return "Active, paid through \(day(end))."
            }
        case .gracePeriod:
            let since = end.map { " since \(day($0))" } ?? ""
            let until = snapshot.gracePeriodExpiresDate.map { " until \(day($0))" } ?? ""
            return "In billing retry\(since), access kept by the grace period\(until)."
        case .billingRetry:
            return "No access: Apple has been retrying the charge\(end.map { " since \(day($0))" } ?? "") (billing retry, no grace period left)."
        case .expired:
            let why = snapshot.expirationIntent.flatMap { intents[$0] }.map { " (\($0))" } ?? ""
            return "No access: expired\(end.map { " on \(day($0))" } ?? "")\(why)."
        case .refunded:
            let when = snapshot.revocationDate.map { " on \(day($0))" } ?? ""
            let share = snapshot.revocationPercentage.map { ", \(String(format: "%g", Double($0) / 1000))% of it" } ?? ""
            let reason = snapshot.revocationReason == 1 ? " (the customer reported an issue with the app)" : ""
            return "No access: refunded\(when)\(share)\(reason)."
        case .revoked:
            return "No access: revoked\(snapshot.revocationDate.map { " on \(day($0))" } ?? "") (family sharing or an assigned seat ended)."
        case .owned:
            return "Owned\(snapshot.purchaseDate.map { " since \(day($0))" } ?? "") (a non-consumable: it never expires)."
        case .consumed:
            return "A consumable bought\(snapshot.purchaseDate.map { " on \(day($0))" } ?? ""): it grants nothing lasting."
        case .migrated:
            return "No access from this purchase: it was migrated to \(snapshot.migratedToOriginalTransactionId ?? "another purchase"), which grants it now."
        }
    }

    /// Apple's `expirationIntent` values.
    private static let intents: [Int64: String] = [
        1: "the customer cancelled", 2: "a billing error", 3: "the customer did not agree to a price increase",
        4: "the product was not available at renewal", 5: "another reason",
    ]

    /// `2 Dec 2026`, UTC.
    package static func day(_ milliseconds: Int64) -> String {
        // Civil date from days since 1970 (H. Hinnant's days_from_civil, inverted): no
        // formatter per call on a page that explains a customer's many purchases.
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(day) \(Self.months[Int(month) - 1]) \(year)"
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}

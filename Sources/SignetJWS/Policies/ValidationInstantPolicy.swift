import AppStoreModels
import Foundation
import SignetCore

/// Step 4 (``VerificationStep/validationInstant``): a `signedDate` at most
/// ``VerifierConfiguration/maxFutureSkew`` ahead of the clock (`signed_date_in_future`), and
/// the instant the chain is judged at under ``VerificationDateRule``.
///
/// The instant is read from a payload whose chain is not judged yet — as Apple's library
/// does, since the chain can only be judged at some instant. That is safe because the
/// signature already held and the chain is judged at exactly this instant next; the
/// future check stops a payload from choosing an instant nobody has reached.
struct ValidationInstantPolicy: JWSVerificationPolicy {
    static let step = VerificationStep.validationInstant

    let dateRule: VerificationDateRule
    let maxFutureSkewMilliseconds: Int64
    let now: @Sendable () -> Date

    init(configuration: VerifierConfiguration) {
        dateRule = configuration.dateRule
        now = configuration.now
        // Halved at the top: it is added to a timestamp.
        maxFutureSkewMilliseconds = min(configuration.maxFutureSkew.clampedMilliseconds, Int64.max / 2)
    }

    /// The instant for a payload's `signedDate` (milliseconds), the current time without one.
    func check(_ signedDate: Int64?, role: JWSRole) throws(RecordRejection) -> ValidationInstant {
        try check(signedDate, role: role, orElse: { nil })
    }

    /// As ``check(_:role:)``; without a `signedDate` (and under the signedDate rule) asks
    /// `fallback` first — a notification's nested dates — before using the current time.
    func check(
        _ signedDate: Int64?, role: JWSRole, orElse fallback: () -> ValidationInstant?
    ) throws(RecordRejection) -> ValidationInstant {
        let nowMilliseconds = AppleTimestamp(now())?.millisecondsSince1970 ?? 0
        if let signedDate {
            let (limit, overflow) = nowMilliseconds.addingReportingOverflow(maxFutureSkewMilliseconds)
            if !overflow && signedDate > limit {
                let ahead = ValidationInstant.span(signedDate.subtractingReportingOverflow(nowMilliseconds).partialValue)
                throw RecordRejection(
                    .signedDateInFuture,
                    "\(role.field): signedDate \(ValidationInstant.iso(signedDate)) is \(ahead) ahead of this host's clock (\(ValidationInstant.iso(nowMilliseconds))); at most \(ValidationInstant.span(maxFutureSkewMilliseconds)) is allowed — forged, or this host's clock is wrong")
            }
        }
        if dateRule == .currentTime { return ValidationInstant(milliseconds: nowMilliseconds, source: .currentTime) }
        if let signedDate { return ValidationInstant(milliseconds: signedDate, source: .signedDate) }
        return fallback() ?? ValidationInstant(milliseconds: nowMilliseconds, source: .currentTime)
    }
}

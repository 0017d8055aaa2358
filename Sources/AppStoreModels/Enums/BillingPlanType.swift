/// The billing plan of a subscription with a commitment (`billingPlanType`, `renewalBillingPlanType`).
///
/// An open set: a value Apple adds later decodes as itself (`rawValue` is kept) instead of
/// failing the whole payload. Compare against the static members.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/billingplantype>
public struct BillingPlanType: RawRepresentable, Hashable, Sendable, Codable, JSONOpenStringValue {
    /// The raw JSON value.
    public let rawValue: String

    /// Wraps any raw value, documented or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `BILLED_UPFRONT`: The whole period is billed up front.
    public static let billedUpfront = BillingPlanType(rawValue: "BILLED_UPFRONT")
    /// `MONTHLY`: Billed monthly over a 12-month commitment.
    public static let monthly = BillingPlanType(rawValue: "MONTHLY")

    /// Every value Apple documents today, in documentation order.
    public static let documentedValues: [BillingPlanType] = [
        .billedUpfront, .monthly,
    ]

    /// Whether Apple documents this value (false for values added after this code was written).
    public var isDocumented: Bool { Self.documentedValues.contains(self) }
}

extension BillingPlanType: CustomStringConvertible {
    public var description: String { rawValue }
}

extension BillingPlanType: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

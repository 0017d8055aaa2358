import AppStoreModels
import Foundation

/// How the fake App Store Server API judges a Send Consumption Information body: every rule
/// Apple documents for v2's `ConsumptionRequest` and V1's `ConsumptionRequestV1`
/// (docs/consumption.md), each refusal with Apple's error name and, where Apple's pages give
/// one, its `errorCode`.
///
/// Apple's pages give no code for ConsumptionPercentageOutOfRangeError,
/// UndeliveredConsumptionPercentageNonZeroError and AdvancedCommerceTransactionNotSupportedError;
/// for those the fake answers 4000000 (GeneralBadRequestError) with the name as the message.
/// Stricter than Apple in one place: a key `ConsumptionRequest` does not have is refused, so a
/// field that leaks into the body (the product type Signet validates with) shows up in tests.
public enum FakeConsumptionRules {
    /// One refusal: what Apple would answer.
    public struct Refusal: Sendable, Hashable {
        /// Apple's error object name, e.g. `InvalidCustomerConsentedError` (`malformed`: no JSON object).
        public var name: String
        /// The `errorCode` answered (nil: a bare 400, Apple's "the request is malformed").
        public var errorCode: Int?
    }

    /// Codes Apple's pages give.
    static let codes: [String: Int] = [
        "InvalidCustomerConsentedError": 4_000_035, "InvalidDeliveryStatusError": 4_000_036,
        "InvalidSampleContentProvidedError": 4_000_041, "InvalidRefundPreferenceError": 4_000_044,
        "ConsumptionPercentageAutoRenewableSubscriptionError": 4_000_209, "InvalidAccountTenureError": 4_000_032,
        "InvalidAppAccountTokenError": 4_000_033, "InvalidConsumptionStatusError": 4_000_034,
        "InvalidLifetimeDollarsPurchasedError": 4_000_037, "InvalidLifetimeDollarsRefundedError": 4_000_038,
        "InvalidPlatformError": 4_000_039, "InvalidPlayTimeError": 4_000_040, "InvalidUserStatusError": 4_000_042,
    ]

    /// ConsumptionRequestV1's coded fields: the codes Apple documents and the error it names.
    static let codesV1: [(key: String, codes: ClosedRange<Int>, error: String, required: Bool)] = [
        ("accountTenure", 0...7, "InvalidAccountTenureError", true), ("consumptionStatus", 0...3, "InvalidConsumptionStatusError", true),
        ("deliveryStatus", 0...5, "InvalidDeliveryStatusError", true), ("lifetimeDollarsPurchased", 0...7, "InvalidLifetimeDollarsPurchasedError", true),
        ("lifetimeDollarsRefunded", 0...7, "InvalidLifetimeDollarsRefundedError", true), ("platform", 0...2, "InvalidPlatformError", true),
        ("playTime", 0...7, "InvalidPlayTimeError", true), ("userStatus", 0...4, "InvalidUserStatusError", true),
        ("refundPreference", 0...3, "InvalidRefundPreferenceError", false),
    ]

    static let keys: Set<String> = ["customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference"]
    static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    static func refusal(_ name: String) -> Refusal { Refusal(name: name, errorCode: codes[name] ?? 4_000_000) }

    /// Why Apple would refuse `body` for a purchase of `productType` (Apple's `type` string), or
    /// nil when it would answer 202.
    public static func refusal(body: [UInt8], productType: String, advancedCommerce: Bool) -> Refusal? {
        guard let json = try? JSONElement.parse(body), case .object(let members) = json else {
            return Refusal(name: "malformed", errorCode: nil)
        }
        if let stray = members.first(where: { !keys.contains($0.key) }) {
            return Refusal(name: "unknown key \(stray.key)", errorCode: 4_000_000)
        }
        if advancedCommerce { return refusal("AdvancedCommerceTransactionNotSupportedError") }
        guard json["customerConsented"] == .bool(true) else { return refusal("InvalidCustomerConsentedError") }
        guard let delivery = json["deliveryStatus"]?.stringValue, deliveryStatuses.contains(delivery) else {
            return refusal("InvalidDeliveryStatusError")
        }
        guard case .bool = json["sampleContentProvided"] else { return refusal("InvalidSampleContentProvidedError") }
        let preference = json["refundPreference"]
        if let preference, !(preference.stringValue.map { refundPreferences.contains($0) } ?? false) {
            return refusal("InvalidRefundPreferenceError")
        }
        var percentage: Int?
        if let value = json["consumptionPercentage"] {
            // int32 on Apple's page: an integer literal, nothing else.
            guard case .number(let text) = value, let number = Int32(text) else { return Refusal(name: "malformed", errorCode: nil) }
            percentage = Int(number)
        }
        if productType == "Auto-Renewable Subscription" {
            return percentage == nil ? nil : refusal("ConsumptionPercentageAutoRenewableSubscriptionError")
        }
        if let percentage, !(0...100_000).contains(percentage) { return refusal("ConsumptionPercentageOutOfRangeError") }
        if delivery != "DELIVERED", let percentage, percentage != 0 { return refusal("UndeliveredConsumptionPercentageNonZeroError") }
        if preference?.stringValue == "GRANT_PRORATED" {
            guard let percentage, percentage > 0, percentage < 100_000 else { return refusal("ConsumptionPercentageOutOfRangeError") }
        }
        return nil
    }

    /// Why Apple would refuse a V1 body (every field but `refundPreference` required), or nil.
    public static func refusalV1(body: [UInt8]) -> Refusal? {
        guard let json = try? JSONElement.parse(body), case .object(let members) = json else {
            return Refusal(name: "malformed", errorCode: nil)
        }
        let known = Set(codesV1.map(\.key) + ["customerConsented", "sampleContentProvided", "appAccountToken"])
        if let stray = members.first(where: { !known.contains($0.key) }) {
            return Refusal(name: "unknown key \(stray.key)", errorCode: 4_000_000)
        }
        guard json["customerConsented"] == .bool(true) else { return refusal("InvalidCustomerConsentedError") }
        guard case .bool = json["sampleContentProvided"] else { return refusal("InvalidSampleContentProvidedError") }
        for (key, codes, error, required) in codesV1 {
            guard let value = json[key] else {
                if required { return refusal(error) }
                continue
            }
            guard case .number(let text) = value, let code = Int(text), codes.contains(code) else { return refusal(error) }
        }
        guard let token = json["appAccountToken"]?.stringValue, token.isEmpty || UUID(uuidString: token) != nil else {
            return refusal("InvalidAppAccountTokenError")
        }
        return nil
    }
}

import Foundation

/// The body of Send Consumption Information V1 (Apple's `ConsumptionRequestV1`): the only
/// answer Apple takes for a purchase made through the Advanced Commerce API, which v2
/// refuses (docs/consumption.md).
///
/// Every field but ``refundPreference`` is required. The integer fields are Apple's codes
/// (0 is always "undeclared"); ``validate()`` checks each against the range Apple documents.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/consumptionrequestv1>
public struct ConsumptionInformationV1: Encodable, Sendable, Hashable {
    /// Must be `true` (Apple refuses anything else, and without consent nothing is sent).
    public var customerConsented: Bool
    /// 0 undeclared, 1 not consumed, 2 partially, 3 fully consumed.
    public var consumptionStatus: Int
    /// 0 delivered and working, 1 quality issue, 2 wrong item, 3 server outage, 4 in-game
    /// currency change, 5 other reason.
    public var deliveryStatus: Int
    /// 0 undeclared, 1 Apple platform, 2 non-Apple platform.
    public var platform: Int
    public var sampleContentProvided: Bool
    /// The purchase's `appAccountToken` (a UUID), or empty when the app sets none.
    public var appAccountToken: String
    /// Account age: 0 undeclared, 1 0–3 days, 2 3–10, 3 10–30, 4 30–90, 5 90–180, 6 180–365, 7 over 365.
    public var accountTenure: Int
    /// Time in the app: 0 undeclared, 1 0–5 minutes, 2 5–60 minutes, 3 1–6 hours, 4 6–24 hours,
    /// 5 1–4 days, 6 4–16 days, 7 over 16 days.
    public var playTime: Int
    /// USD refunded: 0 undeclared, 1 $0, 2 to $49.99, 3 to $99.99, 4 to $499.99, 5 to $999.99,
    /// 6 to $1999.99, 7 $2000 or more.
    public var lifetimeDollarsRefunded: Int
    /// USD purchased, in the same brackets as ``lifetimeDollarsRefunded``.
    public var lifetimeDollarsPurchased: Int
    /// 0 undeclared, 1 active, 2 suspended, 3 terminated, 4 limited access.
    public var userStatus: Int
    /// 0 undeclared, 1 prefer grant, 2 prefer decline, 3 no preference; nil: not sent.
    public var refundPreference: Int?

    public init(
        customerConsented: Bool, consumptionStatus: Int, deliveryStatus: Int, platform: Int, sampleContentProvided: Bool,
        appAccountToken: String = "", accountTenure: Int = 0, playTime: Int = 0, lifetimeDollarsRefunded: Int = 0,
        lifetimeDollarsPurchased: Int = 0, userStatus: Int = 0, refundPreference: Int? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.deliveryStatus = deliveryStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }

    /// Each coded field, its value and the codes Apple documents for it.
    private var codedFields: [(field: String, value: Int?, codes: ClosedRange<Int>)] {
        [
            ("consumptionStatus", consumptionStatus, 0...3), ("deliveryStatus", deliveryStatus, 0...5), ("platform", platform, 0...2),
            ("accountTenure", accountTenure, 0...7), ("playTime", playTime, 0...7),
            ("lifetimeDollarsRefunded", lifetimeDollarsRefunded, 0...7), ("lifetimeDollarsPurchased", lifetimeDollarsPurchased, 0...7),
            ("userStatus", userStatus, 0...4), ("refundPreference", refundPreference, 0...3),
        ]
    }

    /// Throws the first of Apple's documented rules this body breaks, naming the field: a
    /// body Apple would answer 400 must never be sent.
    public func validate() throws(ConsumptionInformationError) {
        guard customerConsented else {
            throw ConsumptionInformationError.notConsented
        }
        for (field, value, codes) in codedFields {
            if let value, !codes.contains(value) {
                throw ConsumptionInformationError(
                    .codeOutOfRange, field: field, "must be one of Apple's codes \(codes.lowerBound)...\(codes.upperBound), not \(value)")
            }
        }
        guard appAccountToken.isEmpty || UUID(uuidString: appAccountToken) != nil else {
            throw ConsumptionInformationError(
                .invalidAppAccountToken, field: "appAccountToken", "must be a UUID or empty, not \"\(appAccountToken)\"")
        }
    }

    private enum CodingKeys: String, CodingKey {
        case customerConsented, consumptionStatus, deliveryStatus, platform, sampleContentProvided, appAccountToken
        case accountTenure, playTime, lifetimeDollarsRefunded, lifetimeDollarsPurchased, userStatus, refundPreference
    }
}

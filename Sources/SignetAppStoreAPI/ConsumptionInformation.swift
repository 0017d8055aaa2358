public import AppStoreModels

/// The body of Send Consumption Information (v2, Apple's `ConsumptionRequest`): what Signet
/// tells Apple about a purchase whose customer asked for a refund (docs/consumption.md).
///
/// Encodes with exactly Apple's keys (`customerConsented`, `deliveryStatus`,
/// `sampleContentProvided`, and `consumptionPercentage`, `refundPreference` only when set).
/// ``productType`` is not sent: Apple's rules for `consumptionPercentage` depend on it, so
/// ``validate()`` needs it to refuse, before anything is sent, every body Apple documents a
/// 400 for.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/consumptionrequest>
public struct ConsumptionInformation: Encodable, Sendable, Hashable {
    /// Whether the app delivered a purchase that works properly (`deliveryStatus`).
    ///
    /// <https://developer.apple.com/documentation/appstoreserverapi/deliverystatus>
    public enum DeliveryStatus: String, Codable, Sendable, Hashable, CaseIterable {
        /// Delivered and working properly.
        case delivered = "DELIVERED"
        /// Not delivered because of a quality issue.
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        /// The wrong item was delivered.
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        /// Not delivered because of a server outage.
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        /// Not delivered for another reason.
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// The outcome the developer prefers (`refundPreference`); absent: no preference.
    ///
    /// <https://developer.apple.com/documentation/appstoreserverapi/refundpreference>
    public enum RefundPreference: String, Codable, Sendable, Hashable, CaseIterable {
        /// Apple should decline the refund.
        case decline = "DECLINE"
        /// Apple should grant the refund in full.
        case grantFull = "GRANT_FULL"
        /// Apple should grant a prorated refund.
        case grantProrated = "GRANT_PRORATED"
    }

    /// `consumptionPercentage` of a purchase consumed in full: 100% in milliunits.
    public static let fullyConsumed = 100_000

    /// The purchase's `type` from its signed transaction. Not sent; decides which
    /// `consumptionPercentage` Apple accepts.
    public var productType: TransactionType
    /// Whether the customer consented to share this data with Apple. Apple accepts only
    /// `true`, and asks developers not to answer at all without consent.
    public var customerConsented: Bool
    public var deliveryStatus: DeliveryStatus
    /// Whether a free sample, a trial or information about the content's functionality was
    /// given before the purchase.
    public var sampleContentProvided: Bool
    /// How much of the purchase was consumed, in milliunits (0...100000, 50000 = 50%). Never for
    /// an auto-renewable subscription (Apple computes it from elapsed time); 0 when not
    /// delivered; with ``RefundPreference/grantProrated`` strictly between 0 and 100000.
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(
        productType: TransactionType, customerConsented: Bool, deliveryStatus: DeliveryStatus, sampleContentProvided: Bool,
        consumptionPercentage: Int? = nil, refundPreference: RefundPreference? = nil
    ) {
        self.productType = productType
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }

    /// Throws the first of Apple's documented rules this body breaks, naming the field and the
    /// rule: a body Apple would answer 400 must never be sent.
    public func validate() throws(ConsumptionInformationError) {
        guard customerConsented else {
            throw ConsumptionInformationError.notConsented
        }
        guard productType.isDocumented else {
            throw ConsumptionInformationError(
                .unknownProductType, field: "productType",
                "\"\(productType.rawValue)\" is not a product type Apple documents, so the consumptionPercentage rules for it are unknown")
        }
        let percentage = consumptionPercentage
        if productType == .autoRenewableSubscription {
            if let percentage {
                throw ConsumptionInformationError(
                    .percentageForAutoRenewable, field: "consumptionPercentage",
                    "must be omitted for an auto-renewable subscription (Apple computes it from the elapsed time), not \(percentage)")
            }
            return
        }
        if let percentage, !(0...Self.fullyConsumed).contains(percentage) {
            throw ConsumptionInformationError(
                .percentageOutOfRange, field: "consumptionPercentage",
                "is in milliunits and must be within 0...100000 (100000 = 100%), not \(percentage)")
        }
        if deliveryStatus != .delivered {
            guard percentage == 0 else {
                throw ConsumptionInformationError(
                    .percentageNotZeroWhenUndelivered, field: "consumptionPercentage",
                    "must be 0 when deliveryStatus is \(deliveryStatus.rawValue) (anything but DELIVERED), not \(percentage.map { String($0) } ?? "omitted")"
                        + (refundPreference == .grantProrated ? "; so GRANT_PRORATED, which needs more than 0, cannot be asked for an undelivered purchase" : ""))
            }
        }
        if refundPreference == .grantProrated {
            guard let percentage, percentage > 0, percentage < Self.fullyConsumed else {
                throw ConsumptionInformationError(
                    .proratedNeedsPercentage, field: "consumptionPercentage",
                    "must be strictly between 0 and 100000 with refundPreference GRANT_PRORATED for a \(productType.rawValue), not \(percentage.map { String($0) } ?? "omitted")")
            }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case customerConsented, deliveryStatus, sampleContentProvided, consumptionPercentage, refundPreference
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(customerConsented, forKey: .customerConsented)
        try container.encode(deliveryStatus, forKey: .deliveryStatus)
        try container.encode(sampleContentProvided, forKey: .sampleContentProvided)
        // Absent, not null: an auto-renewable subscription's body must not carry the key.
        try container.encodeIfPresent(consumptionPercentage, forKey: .consumptionPercentage)
        try container.encodeIfPresent(refundPreference, forKey: .refundPreference)
    }
}

/// The decoded payload of signed subscription renewal information.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/jwsrenewalinfodecodedpayload>
public struct JWSRenewalInfoDecodedPayload: Hashable, Sendable, Codable {
    /// Why the subscription expired.
    public var expirationIntent: ExpirationIntent?
    /// The original transaction identifier of the subscription.
    public var originalTransactionId: String?
    /// The product that renews at the next billing period.
    public var autoRenewProductId: String?
    /// The product of the current period.
    public var productId: String?
    /// Whether the subscription renews.
    public var autoRenewStatus: AutoRenewStatus?
    /// Whether the App Store is still trying to renew after a billing failure.
    public var isInBillingRetryPeriod: Bool?
    /// Whether the customer responded to a price increase.
    public var priceIncreaseStatus: PriceIncreaseStatus?
    /// When the billing grace period ends; the customer keeps access until then.
    public var gracePeriodExpiresDate: AppleTimestamp?
    /// The type of offer that applies at renewal.
    public var offerType: OfferType?
    /// The offer identifier that applies at renewal.
    public var offerIdentifier: String?
    /// When the App Store signed this payload.
    public var signedDate: AppleTimestamp?
    /// The environment of the subscription.
    public var environment: AppStoreEnvironment?
    /// The start of the most recent run of continuous subscription periods.
    public var recentSubscriptionStartDate: AppleTimestamp?
    /// When the most recent renewal happened or the next one is due.
    public var renewalDate: AppleTimestamp?
    /// The ISO 4217 currency code of `renewalPrice`.
    public var currency: String?
    /// The renewal price in milliunits of `currency`.
    public var renewalPrice: Int64?
    /// The payment mode of the offer that applies at renewal.
    public var offerDiscountType: OfferDiscountType?
    /// Win-back offers the customer can redeem, best first.
    public var eligibleWinBackOfferIds: [String]?
    /// The identifier of the app download transaction.
    public var appTransactionId: String?
    /// The duration of the offer that applies at renewal (ISO 8601).
    public var offerPeriod: String?
    /// The UUID string the app associated with the customer's account, if any.
    public var appAccountToken: String?
    /// The billing plan that applies at renewal.
    public var renewalBillingPlanType: BillingPlanType?
    /// Renewal details of a 12-month commitment.
    public var commitmentInfo: RenewalCommitmentInfo?
    /// Advanced Commerce API renewal details.
    public var advancedCommerceInfo: AdvancedCommerceRenewalInfo?

    /// Creates a value; every field defaults to absent.
    public init(
        expirationIntent: ExpirationIntent? = nil,
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: AutoRenewStatus? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        priceIncreaseStatus: PriceIncreaseStatus? = nil,
        gracePeriodExpiresDate: AppleTimestamp? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        signedDate: AppleTimestamp? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: AppleTimestamp? = nil,
        renewalDate: AppleTimestamp? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        appAccountToken: String? = nil,
        renewalBillingPlanType: BillingPlanType? = nil,
        commitmentInfo: RenewalCommitmentInfo? = nil,
        advancedCommerceInfo: AdvancedCommerceRenewalInfo? = nil
    ) {
        self.expirationIntent = expirationIntent
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.appAccountToken = appAccountToken
        self.renewalBillingPlanType = renewalBillingPlanType
        self.commitmentInfo = commitmentInfo
        self.advancedCommerceInfo = advancedCommerceInfo
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case expirationIntent
        case originalTransactionId
        case autoRenewProductId
        case productId
        case autoRenewStatus
        case isInBillingRetryPeriod
        case priceIncreaseStatus
        case gracePeriodExpiresDate
        case offerType
        case offerIdentifier
        case signedDate
        case environment
        case recentSubscriptionStartDate
        case renewalDate
        case currency
        case renewalPrice
        case offerDiscountType
        case eligibleWinBackOfferIds
        case appTransactionId
        case offerPeriod
        case appAccountToken
        case renewalBillingPlanType
        case commitmentInfo
        case advancedCommerceInfo
    }
}

extension JWSRenewalInfoDecodedPayload: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        self.init()
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .expirationIntent: expirationIntent = try reader.intValue(ExpirationIntent.self)
            case .originalTransactionId: originalTransactionId = try reader.string()
            case .autoRenewProductId: autoRenewProductId = try reader.string()
            case .productId: productId = try reader.string()
            case .autoRenewStatus: autoRenewStatus = try reader.intValue(AutoRenewStatus.self)
            case .isInBillingRetryPeriod: isInBillingRetryPeriod = try reader.bool()
            case .priceIncreaseStatus: priceIncreaseStatus = try reader.intValue(PriceIncreaseStatus.self)
            case .gracePeriodExpiresDate: gracePeriodExpiresDate = try reader.timestamp()
            case .offerType: offerType = try reader.intValue(OfferType.self)
            case .offerIdentifier: offerIdentifier = try reader.string()
            case .signedDate: signedDate = try reader.timestamp()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .recentSubscriptionStartDate: recentSubscriptionStartDate = try reader.timestamp()
            case .renewalDate: renewalDate = try reader.timestamp()
            case .currency: currency = try reader.string()
            case .renewalPrice: renewalPrice = try reader.int64()
            case .offerDiscountType: offerDiscountType = try reader.stringValue(OfferDiscountType.self)
            case .eligibleWinBackOfferIds: eligibleWinBackOfferIds = try reader.stringArray()
            case .appTransactionId: appTransactionId = try reader.string()
            case .offerPeriod: offerPeriod = try reader.string()
            case .appAccountToken: appAccountToken = try reader.string()
            case .renewalBillingPlanType: renewalBillingPlanType = try reader.stringValue(BillingPlanType.self)
            case .commitmentInfo: commitmentInfo = try reader.object(RenewalCommitmentInfo.self)
            case .advancedCommerceInfo: advancedCommerceInfo = try reader.object(AdvancedCommerceRenewalInfo.self)
            }
        }
    }
}

/// The decoded payload of a signed transaction.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/jwstransactiondecodedpayload>
public struct JWSTransactionDecodedPayload: Hashable, Sendable, Codable {
    /// The transaction identifier of the original purchase; stable across renewals, the key of a subscription.
    public var originalTransactionId: String?
    /// The unique identifier of this transaction (purchase, restore or renewal).
    public var transactionId: String?
    /// The identifier of subscription purchase events across devices, including renewals.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The product identifier.
    public var productId: String?
    /// The subscription group of the product.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged the customer for this transaction.
    public var purchaseDate: AppleTimestamp?
    /// The purchase date of the original transaction.
    public var originalPurchaseDate: AppleTimestamp?
    /// When the subscription period of this transaction expires or renews.
    public var expiresDate: AppleTimestamp?
    /// The number of consumables purchased.
    public var quantity: Int?
    /// The kind of in-app purchase.
    public var type: TransactionType?
    /// The UUID string the app associated with the customer's account, if any.
    public var appAccountToken: String?
    /// Whether the customer bought it or has it through Family Sharing.
    public var inAppOwnershipType: InAppOwnershipType?
    /// When the App Store signed this payload.
    public var signedDate: AppleTimestamp?
    /// Why the transaction was refunded or revoked.
    public var revocationReason: RevocationReason?
    /// When the transaction was refunded or revoked; present means the entitlement is gone.
    public var revocationDate: AppleTimestamp?
    /// Whether the customer upgraded to another subscription in the same group.
    public var isUpgraded: Bool?
    /// The type of subscription offer applied.
    public var offerType: OfferType?
    /// The offer or promo code identifier.
    public var offerIdentifier: String?
    /// The environment the transaction happened in.
    public var environment: AppStoreEnvironment?
    /// The storefront country code (ISO 3166-1 alpha-3).
    public var storefront: String?
    /// Apple's identifier of the storefront.
    public var storefrontId: String?
    /// Whether this is a purchase or a renewal.
    public var transactionReason: TransactionReason?
    /// The ISO 4217 currency code of `price`.
    public var currency: String?
    /// The price in milliunits of `currency` (for example 10990 is 10.99).
    public var price: Int64?
    /// The payment mode of the applied offer.
    public var offerDiscountType: OfferDiscountType?
    /// The identifier of the app download transaction.
    public var appTransactionId: String?
    /// The duration of the applied offer (ISO 8601, for example `P1M`).
    public var offerPeriod: String?
    /// How the transaction was revoked.
    public var revocationType: RevocationType?
    /// The refunded share of a prorated refund, in thousandths of a percent (50000 is 50%).
    public var revocationPercentage: Int?
    /// The original transaction identifier of the subscription before a migration.
    public var previousOriginalTransactionId: String?
    /// The billing plan of a subscription with a 12-month commitment.
    public var billingPlanType: BillingPlanType?
    /// Progress through a 12-month commitment.
    public var commitmentInfo: TransactionCommitmentInfo?
    /// Advanced Commerce API details of the transaction.
    public var advancedCommerceInfo: AdvancedCommerceTransactionInfo?

    /// Creates a value; every field defaults to absent.
    public init(
        originalTransactionId: String? = nil,
        transactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: AppleTimestamp? = nil,
        originalPurchaseDate: AppleTimestamp? = nil,
        expiresDate: AppleTimestamp? = nil,
        quantity: Int? = nil,
        type: TransactionType? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: InAppOwnershipType? = nil,
        signedDate: AppleTimestamp? = nil,
        revocationReason: RevocationReason? = nil,
        revocationDate: AppleTimestamp? = nil,
        isUpgraded: Bool? = nil,
        offerType: OfferType? = nil,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: TransactionReason? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        offerDiscountType: OfferDiscountType? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        revocationType: RevocationType? = nil,
        revocationPercentage: Int? = nil,
        previousOriginalTransactionId: String? = nil,
        billingPlanType: BillingPlanType? = nil,
        commitmentInfo: TransactionCommitmentInfo? = nil,
        advancedCommerceInfo: AdvancedCommerceTransactionInfo? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.offerDiscountType = offerDiscountType
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.previousOriginalTransactionId = previousOriginalTransactionId
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
        self.advancedCommerceInfo = advancedCommerceInfo
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case originalTransactionId
        case transactionId
        case webOrderLineItemId
        case bundleId
        case productId
        case subscriptionGroupIdentifier
        case purchaseDate
        case originalPurchaseDate
        case expiresDate
        case quantity
        case type
        case appAccountToken
        case inAppOwnershipType
        case signedDate
        case revocationReason
        case revocationDate
        case isUpgraded
        case offerType
        case offerIdentifier
        case environment
        case storefront
        case storefrontId
        case transactionReason
        case currency
        case price
        case offerDiscountType
        case appTransactionId
        case offerPeriod
        case revocationType
        case revocationPercentage
        case previousOriginalTransactionId
        case billingPlanType
        case commitmentInfo
        case advancedCommerceInfo
    }
}

extension JWSTransactionDecodedPayload: JSONFastDecodable {
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
            case .originalTransactionId: originalTransactionId = try reader.string()
            case .transactionId: transactionId = try reader.string()
            case .webOrderLineItemId: webOrderLineItemId = try reader.string()
            case .bundleId: bundleId = try reader.string()
            case .productId: productId = try reader.string()
            case .subscriptionGroupIdentifier: subscriptionGroupIdentifier = try reader.string()
            case .purchaseDate: purchaseDate = try reader.timestamp()
            case .originalPurchaseDate: originalPurchaseDate = try reader.timestamp()
            case .expiresDate: expiresDate = try reader.timestamp()
            case .quantity: quantity = try reader.int()
            case .type: type = try reader.stringValue(TransactionType.self)
            case .appAccountToken: appAccountToken = try reader.string()
            case .inAppOwnershipType: inAppOwnershipType = try reader.stringValue(InAppOwnershipType.self)
            case .signedDate: signedDate = try reader.timestamp()
            case .revocationReason: revocationReason = try reader.intValue(RevocationReason.self)
            case .revocationDate: revocationDate = try reader.timestamp()
            case .isUpgraded: isUpgraded = try reader.bool()
            case .offerType: offerType = try reader.intValue(OfferType.self)
            case .offerIdentifier: offerIdentifier = try reader.string()
            case .environment: environment = try reader.stringValue(AppStoreEnvironment.self)
            case .storefront: storefront = try reader.string()
            case .storefrontId: storefrontId = try reader.string()
            case .transactionReason: transactionReason = try reader.stringValue(TransactionReason.self)
            case .currency: currency = try reader.string()
            case .price: price = try reader.int64()
            case .offerDiscountType: offerDiscountType = try reader.stringValue(OfferDiscountType.self)
            case .appTransactionId: appTransactionId = try reader.string()
            case .offerPeriod: offerPeriod = try reader.string()
            case .revocationType: revocationType = try reader.stringValue(RevocationType.self)
            case .revocationPercentage: revocationPercentage = try reader.int()
            case .previousOriginalTransactionId: previousOriginalTransactionId = try reader.string()
            case .billingPlanType: billingPlanType = try reader.stringValue(BillingPlanType.self)
            case .commitmentInfo: commitmentInfo = try reader.object(TransactionCommitmentInfo.self)
            case .advancedCommerceInfo: advancedCommerceInfo = try reader.object(AdvancedCommerceTransactionInfo.self)
            }
        }
    }
}

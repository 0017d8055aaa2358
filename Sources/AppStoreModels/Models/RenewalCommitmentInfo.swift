/// What happens when a 12-month commitment renews.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreservernotifications/renewalcommitmentinfo>
public struct RenewalCommitmentInfo: Hashable, Sendable, Codable {
    /// The product the commitment renews to.
    public var commitmentAutoRenewProductId: String?
    /// Whether the commitment renews.
    public var commitmentAutoRenewStatus: AutoRenewStatus?
    /// The billing plan after the commitment renews.
    public var commitmentRenewalBillingPlanType: BillingPlanType?
    /// When the commitment renews.
    public var commitmentRenewalDate: AppleTimestamp?
    /// The renewal price of the commitment in milliunits.
    public var commitmentRenewalPrice: Int64?

    /// Creates a value; every field defaults to absent.
    public init(
        commitmentAutoRenewProductId: String? = nil,
        commitmentAutoRenewStatus: AutoRenewStatus? = nil,
        commitmentRenewalBillingPlanType: BillingPlanType? = nil,
        commitmentRenewalDate: AppleTimestamp? = nil,
        commitmentRenewalPrice: Int64? = nil
    ) {
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case commitmentAutoRenewProductId
        case commitmentAutoRenewStatus
        case commitmentRenewalBillingPlanType
        case commitmentRenewalDate
        case commitmentRenewalPrice
    }
}

extension RenewalCommitmentInfo: JSONFastDecodable {
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
            case .commitmentAutoRenewProductId: commitmentAutoRenewProductId = try reader.string()
            case .commitmentAutoRenewStatus: commitmentAutoRenewStatus = try reader.intValue(AutoRenewStatus.self)
            case .commitmentRenewalBillingPlanType: commitmentRenewalBillingPlanType = try reader.stringValue(BillingPlanType.self)
            case .commitmentRenewalDate: commitmentRenewalDate = try reader.timestamp()
            case .commitmentRenewalPrice: commitmentRenewalPrice = try reader.int64()
            }
        }
    }
}

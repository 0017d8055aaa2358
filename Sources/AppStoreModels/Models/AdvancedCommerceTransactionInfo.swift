/// Advanced Commerce API details of a transaction.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercetransactioninfo>
public struct AdvancedCommerceTransactionInfo: Hashable, Sendable, Codable {
    /// The display name and description of the purchase.
    public var descriptors: AdvancedCommerceDescriptors?
    /// The estimated tax in milliunits.
    public var estimatedTax: Int64?
    /// The purchased items (SKUs).
    public var items: [AdvancedCommerceTransactionItem]?
    /// The subscription period.
    public var period: AdvancedCommercePeriod?
    /// The reference identifier of the purchase request.
    public var requestReferenceId: String?
    /// The tax code of the purchase.
    public var taxCode: String?
    /// The price before tax in milliunits.
    public var taxExclusivePrice: Int64?
    /// The tax rate as a decimal string, for example `"0.15"`.
    public var taxRate: String?

    /// Creates a value; every field defaults to absent.
    public init(
        descriptors: AdvancedCommerceDescriptors? = nil,
        estimatedTax: Int64? = nil,
        items: [AdvancedCommerceTransactionItem]? = nil,
        period: AdvancedCommercePeriod? = nil,
        requestReferenceId: String? = nil,
        taxCode: String? = nil,
        taxExclusivePrice: Int64? = nil,
        taxRate: String? = nil
    ) {
        self.descriptors = descriptors
        self.estimatedTax = estimatedTax
        self.items = items
        self.period = period
        self.requestReferenceId = requestReferenceId
        self.taxCode = taxCode
        self.taxExclusivePrice = taxExclusivePrice
        self.taxRate = taxRate
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case descriptors
        case estimatedTax
        case items
        case period
        case requestReferenceId
        case taxCode
        case taxExclusivePrice
        case taxRate
    }
}

extension AdvancedCommerceTransactionInfo: JSONFastDecodable {
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
            case .descriptors: descriptors = try reader.object(AdvancedCommerceDescriptors.self)
            case .estimatedTax: estimatedTax = try reader.int64()
            case .items: items = try reader.objectArray(AdvancedCommerceTransactionItem.self)
            case .period: period = try reader.stringValue(AdvancedCommercePeriod.self)
            case .requestReferenceId: requestReferenceId = try reader.string()
            case .taxCode: taxCode = try reader.string()
            case .taxExclusivePrice: taxExclusivePrice = try reader.int64()
            case .taxRate: taxRate = try reader.string()
            }
        }
    }
}

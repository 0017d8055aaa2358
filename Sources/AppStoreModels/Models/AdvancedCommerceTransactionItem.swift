/// One item (SKU) of an Advanced Commerce transaction.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercetransactionitem>
public struct AdvancedCommerceTransactionItem: Hashable, Sendable, Codable {
    /// The item's SKU (JSON key `SKU`).
    public var sku: String?
    /// The item's description.
    public var description: String?
    /// The item's display name.
    public var displayName: String?
    /// The offer applied to the item.
    public var offer: AdvancedCommerceOffer?
    /// The item price in milliunits.
    public var price: Int64?
    /// Refunds of the item.
    public var refunds: [AdvancedCommerceRefund]?
    /// When the item was revoked.
    public var revocationDate: AppleTimestamp?

    /// Creates a value; every field defaults to absent.
    public init(
        sku: String? = nil,
        description: String? = nil,
        displayName: String? = nil,
        offer: AdvancedCommerceOffer? = nil,
        price: Int64? = nil,
        refunds: [AdvancedCommerceRefund]? = nil,
        revocationDate: AppleTimestamp? = nil
    ) {
        self.sku = sku
        self.description = description
        self.displayName = displayName
        self.offer = offer
        self.price = price
        self.refunds = refunds
        self.revocationDate = revocationDate
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case sku = "SKU"
        case description
        case displayName
        case offer
        case price
        case refunds
        case revocationDate
    }
}

extension AdvancedCommerceTransactionItem: JSONFastDecodable {
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
            case .sku: sku = try reader.string()
            case .description: description = try reader.string()
            case .displayName: displayName = try reader.string()
            case .offer: offer = try reader.object(AdvancedCommerceOffer.self)
            case .price: price = try reader.int64()
            case .refunds: refunds = try reader.objectArray(AdvancedCommerceRefund.self)
            case .revocationDate: revocationDate = try reader.timestamp()
            }
        }
    }
}

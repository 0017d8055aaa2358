/// A price increase on an Advanced Commerce item.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercepriceincreaseinfo>
public struct AdvancedCommercePriceIncreaseInfo: Hashable, Sendable, Codable {
    /// SKUs whose price changes with this one.
    public var dependentSKUs: [String]?
    /// The new price in milliunits.
    public var price: Int64?
    /// The state of the price increase.
    public var status: AdvancedCommercePriceIncreaseStatus?

    /// Creates a value; every field defaults to absent.
    public init(
        dependentSKUs: [String]? = nil,
        price: Int64? = nil,
        status: AdvancedCommercePriceIncreaseStatus? = nil
    ) {
        self.dependentSKUs = dependentSKUs
        self.price = price
        self.status = status
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case dependentSKUs
        case price
        case status
    }
}

extension AdvancedCommercePriceIncreaseInfo: JSONFastDecodable {
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
            case .dependentSKUs: dependentSKUs = try reader.stringArray()
            case .price: price = try reader.int64()
            case .status: status = try reader.stringValue(AdvancedCommercePriceIncreaseStatus.self)
            }
        }
    }
}

/// A discount offer on an Advanced Commerce item.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommerceoffer>
public struct AdvancedCommerceOffer: Hashable, Sendable, Codable {
    /// The length of one offer period.
    public var period: AdvancedCommercePeriod?
    /// How many periods the offer lasts.
    public var periodCount: Int?
    /// The offer price in milliunits.
    public var price: Int64?
    /// Why the offer was given.
    public var reason: AdvancedCommerceOfferReason?

    /// Creates a value; every field defaults to absent.
    public init(
        period: AdvancedCommercePeriod? = nil,
        periodCount: Int? = nil,
        price: Int64? = nil,
        reason: AdvancedCommerceOfferReason? = nil
    ) {
        self.period = period
        self.periodCount = periodCount
        self.price = price
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case period
        case periodCount
        case price
        case reason
    }
}

extension AdvancedCommerceOffer: JSONFastDecodable {
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
            case .period: period = try reader.stringValue(AdvancedCommercePeriod.self)
            case .periodCount: periodCount = try reader.int()
            case .price: price = try reader.int64()
            case .reason: reason = try reader.stringValue(AdvancedCommerceOfferReason.self)
            }
        }
    }
}

/// A refund of an Advanced Commerce item.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercerefund>
public struct AdvancedCommerceRefund: Hashable, Sendable, Codable {
    /// The refunded amount in milliunits.
    public var refundAmount: Int64?
    /// When the refund happened.
    public var refundDate: AppleTimestamp?
    /// Why the item was refunded.
    public var refundReason: AdvancedCommerceRefundReason?
    /// How much was refunded.
    public var refundType: AdvancedCommerceRefundType?

    /// Creates a value; every field defaults to absent.
    public init(
        refundAmount: Int64? = nil,
        refundDate: AppleTimestamp? = nil,
        refundReason: AdvancedCommerceRefundReason? = nil,
        refundType: AdvancedCommerceRefundType? = nil
    ) {
        self.refundAmount = refundAmount
        self.refundDate = refundDate
        self.refundReason = refundReason
        self.refundType = refundType
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case refundAmount
        case refundDate
        case refundReason
        case refundType
    }
}

extension AdvancedCommerceRefund: JSONFastDecodable {
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
            case .refundAmount: refundAmount = try reader.int64()
            case .refundDate: refundDate = try reader.timestamp()
            case .refundReason: refundReason = try reader.stringValue(AdvancedCommerceRefundReason.self)
            case .refundType: refundType = try reader.stringValue(AdvancedCommerceRefundType.self)
            }
        }
    }
}

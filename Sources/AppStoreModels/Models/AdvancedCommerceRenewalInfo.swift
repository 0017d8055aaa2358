/// Advanced Commerce API details of a subscription renewal.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercerenewalinfo>
public struct AdvancedCommerceRenewalInfo: Hashable, Sendable, Codable {
    /// A token to pass back in later Advanced Commerce requests.
    public var consistencyToken: String?
    /// The display name and description of the subscription.
    public var descriptors: AdvancedCommerceDescriptors?
    /// The items that renew.
    public var items: [AdvancedCommerceRenewalItem]?
    /// The renewal period.
    public var period: AdvancedCommercePeriod?
    /// The reference identifier of the request.
    public var requestReferenceId: String?
    /// The tax code.
    public var taxCode: String?

    /// Creates a value; every field defaults to absent.
    public init(
        consistencyToken: String? = nil,
        descriptors: AdvancedCommerceDescriptors? = nil,
        items: [AdvancedCommerceRenewalItem]? = nil,
        period: AdvancedCommercePeriod? = nil,
        requestReferenceId: String? = nil,
        taxCode: String? = nil
    ) {
        self.consistencyToken = consistencyToken
        self.descriptors = descriptors
        self.items = items
        self.period = period
        self.requestReferenceId = requestReferenceId
        self.taxCode = taxCode
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case consistencyToken
        case descriptors
        case items
        case period
        case requestReferenceId
        case taxCode
    }
}

extension AdvancedCommerceRenewalInfo: JSONFastDecodable {
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
            case .consistencyToken: consistencyToken = try reader.string()
            case .descriptors: descriptors = try reader.object(AdvancedCommerceDescriptors.self)
            case .items: items = try reader.objectArray(AdvancedCommerceRenewalItem.self)
            case .period: period = try reader.stringValue(AdvancedCommercePeriod.self)
            case .requestReferenceId: requestReferenceId = try reader.string()
            case .taxCode: taxCode = try reader.string()
            }
        }
    }
}

/// Display information of an Advanced Commerce purchase.
///
/// Every field is optional: Apple omits fields that do not apply, and an absent field is never
/// an error. Unknown fields are ignored.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/advancedcommercedescriptors>
public struct AdvancedCommerceDescriptors: Hashable, Sendable, Codable {
    /// The description.
    public var description: String?
    /// The display name.
    public var displayName: String?

    /// Creates a value; every field defaults to absent.
    public init(
        description: String? = nil,
        displayName: String? = nil
    ) {
        self.description = description
        self.displayName = displayName
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case description
        case displayName
    }
}

extension AdvancedCommerceDescriptors: JSONFastDecodable {
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
            case .description: description = try reader.string()
            case .displayName: displayName = try reader.string()
            }
        }
    }
}

/// One page of Get Notification History (App Store Server API), as Apple answers it: 20
/// items at most, and a token for the next page.
///
/// Read by the fast decoder: a page carries twenty ~12 KB `signedPayload` strings, and
/// `JSONDecoder` spent more time on them than the rest of the client together.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponse>
public struct NotificationHistoryResponse: Codable, Sendable, Hashable {
    public var notificationHistory: [NotificationHistoryItem]
    public var hasMore: Bool
    /// The token for the next page (present while `hasMore`).
    public var paginationToken: String?

    public init(notificationHistory: [NotificationHistoryItem], hasMore: Bool, paginationToken: String?) {
        self.notificationHistory = notificationHistory
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // An empty window may come without the array; absent and empty mean the same.
        notificationHistory = try container.decodeIfPresent([NotificationHistoryItem].self, forKey: .notificationHistory) ?? []
        hasMore = try container.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        paginationToken = try container.decodeIfPresent(String.self, forKey: .paginationToken)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case notificationHistory
        case hasMore
        case paginationToken
    }
}

extension NotificationHistoryResponse: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        self.init(notificationHistory: [], hasMore: false, paginationToken: nil)
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .notificationHistory: notificationHistory = try reader.objectArray(NotificationHistoryItem.self) ?? []
            case .hasMore: hasMore = try reader.bool() ?? false
            case .paginationToken: paginationToken = try reader.string()
            }
        }
    }
}

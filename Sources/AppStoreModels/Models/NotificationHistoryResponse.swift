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
        // Both required: a 200 `{}` (a proxy, a changed API) must not read as "no more pages".
        notificationHistory = try container.decode([NotificationHistoryItem].self, forKey: .notificationHistory)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
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
        let start = reader.pos
        var items: [NotificationHistoryItem]?
        var more: Bool?
        var token: String?
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .notificationHistory: items = try reader.objectArray(NotificationHistoryItem.self)
            case .hasMore: more = try reader.bool()
            case .paginationToken: token = try reader.string()
            }
        }
        // Both required (null counts as missing): a 200 `{}` from a proxy or a changed API
        // must fail the page, never read as an empty last page.
        guard let items else { throw AppStoreJSONError(.typeMismatch, offset: start, "a notification history page has no notificationHistory array") }
        guard let more else { throw AppStoreJSONError(.typeMismatch, offset: start, "a notification history page has no hasMore") }
        self.init(notificationHistory: items, hasMore: more, paginationToken: token)
    }
}

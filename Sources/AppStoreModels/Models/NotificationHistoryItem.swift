/// One notification Apple sent (or tried to), from Get Notification History: the exact
/// `signedPayload` the webhook would have received, and each delivery attempt. Verify the
/// payload before trusting it.
///
/// <https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponseitem>
public struct NotificationHistoryItem: Codable, Sendable, Hashable {
    public var signedPayload: String
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String, sendAttempts: [SendAttempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try container.decode(String.self, forKey: .signedPayload)
        sendAttempts = try container.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case signedPayload
        case sendAttempts
    }
}

extension NotificationHistoryItem: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        let start = reader.pos
        var payload: String?
        var attempts: [SendAttempt] = []
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .signedPayload: payload = try reader.string()
            case .sendAttempts: attempts = try reader.objectArray(SendAttempt.self) ?? []
            }
        }
        // The one field without which an item means nothing.
        guard let payload else { throw AppStoreJSONError(.typeMismatch, offset: start, "a notification history item has no signedPayload") }
        self.init(signedPayload: payload, sendAttempts: attempts)
    }
}

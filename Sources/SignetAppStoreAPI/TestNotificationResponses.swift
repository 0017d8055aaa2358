public import AppStoreModels
/// Request a Test Notification: the token to ask for its status with.
public struct TestNotificationResponse: Codable, Sendable, Hashable {
    public var testNotificationToken: String
}

/// Get Test Notification Status: the TEST notification and Apple's attempts to deliver it.
public struct TestNotificationStatusResponse: Codable, Sendable, Hashable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try container.decodeIfPresent(String.self, forKey: .signedPayload)
        // Required (an empty array when Apple has not tried yet): a 200 `{}` is not an answer.
        sendAttempts = try container.decode([SendAttempt].self, forKey: .sendAttempts)
    }
}

/// One attempt to deliver a notification to the app's server (Get Notification History,
/// Get Test Notification Status).
///
/// <https://developer.apple.com/documentation/appstoreserverapi/sendattemptitem>
public struct SendAttempt: Codable, Sendable, Hashable {
    /// When Apple tried (UNIX milliseconds).
    public var attemptDate: Int64?
    /// `SUCCESS`, `TIMED_OUT`, `NO_RESPONSE`, `CIRCULAR_REDIRECT`, ... kept as Apple's
    /// string, so values added later pass through unchanged.
    public var sendAttemptResult: String?

    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case attemptDate
        case sendAttemptResult
    }
}

extension SendAttempt: JSONFastDecodable {
    private static let keys = JSONKeyTable<CodingKeys>()

    init(json reader: inout JSONReader) throws {
        self.init(attemptDate: nil, sendAttemptResult: nil)
        try reader.beginObject()
        var first = true
        while try reader.nextMember(&first) {
            guard let key = try reader.readKey(Self.keys) else {
                try reader.skipValue()
                continue
            }
            switch key {
            case .attemptDate: attemptDate = try reader.int64()
            case .sendAttemptResult: sendAttemptResult = try reader.string()
            }
        }
    }
}

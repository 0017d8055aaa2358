import Foundation

/// A message to upload (Upload Message's `UploadMessageRequestBody`): the text Apple shows on
/// the subscription's page, with an optional image and bullet points. Apple reviews it (state
/// `PENDING`, then `APPROVED` or `REJECTED`; Sandbox approves at once). Messages cannot be
/// edited: upload a new one under a new identifier.
public struct RetentionMessage: Sendable, Hashable, Codable {
    /// Where the header goes: Apple's `headerPosition`.
    public enum HeaderPosition: String, Sendable, Hashable, Codable, CaseIterable {
        case aboveBody = "ABOVE_BODY"
        /// Needs an ``image``.
        case aboveImage = "ABOVE_IMAGE"
    }

    /// An image shown with the message (uploaded `FULL_SIZE`), or beside a bullet point
    /// (uploaded `BULLET_POINT`).
    public struct Image: Sendable, Hashable, Codable {
        public var imageIdentifier: String
        public var altText: String

        public init(imageIdentifier: String, altText: String) {
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }

    /// One bullet point: its text and its image.
    public struct BulletPoint: Sendable, Hashable, Codable {
        public var text: String
        public var imageIdentifier: String
        public var altText: String

        public init(text: String, imageIdentifier: String, altText: String) {
            self.text = text
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }

    /// At most 66 characters.
    public var header: String
    /// At most 144 characters.
    public var body: String
    public var image: Image?
    /// At most 5 (Apple's libraries' limit; Apple states none).
    public var bulletPoints: [BulletPoint]?
    public var headerPosition: HeaderPosition?

    public init(header: String, body: String, image: Image? = nil, bulletPoints: [BulletPoint]? = nil, headerPosition: HeaderPosition? = nil) {
        self.header = header
        self.body = body
        self.image = image
        self.bulletPoints = bulletPoints
        self.headerPosition = headerPosition
    }

    /// Apple's length limits, in characters. Counted as Unicode scalars: Apple says
    /// "characters" of a UTF-8 value without defining them, and scalars are the stricter count
    /// (an emoji of several scalars is one grapheme).
    static let headerLimit = 66, bodyLimit = 144, altTextLimit = 150, bulletTextLimit = 66, bulletPointLimit = 5

    /// Throws ``RetentionMessagingError`` naming the first rule broken; identifiers come back lower-cased.
    public func validated() throws(RetentionMessagingError) -> RetentionMessage {
        var message = self
        try Self.check(header, field: "header", limit: Self.headerLimit, .headerTooLong)
        try Self.check(body, field: "body", limit: Self.bodyLimit, .bodyTooLong)
        if let image {
            message.image?.imageIdentifier = try RetentionIdentifier.canonical(image.imageIdentifier, field: "image.imageIdentifier")
            try Self.check(image.altText, field: "image.altText", limit: Self.altTextLimit, .altTextTooLong)
        }
        if let bulletPoints {
            guard bulletPoints.count <= Self.bulletPointLimit else {
                throw RetentionMessagingError(
                    .tooManyBulletPoints, field: "bulletPoints", "has \(bulletPoints.count); at most \(Self.bulletPointLimit)")
            }
            for (index, point) in bulletPoints.enumerated() {
                try Self.check(point.text, field: "bulletPoints[\(index)].text", limit: Self.bulletTextLimit, .bulletPointTextTooLong)
                try Self.check(point.altText, field: "bulletPoints[\(index)].altText", limit: Self.altTextLimit, .altTextTooLong)
                message.bulletPoints?[index].imageIdentifier = try RetentionIdentifier.canonical(
                    point.imageIdentifier, field: "bulletPoints[\(index)].imageIdentifier")
            }
        }
        if headerPosition == .aboveImage, image == nil {
            throw RetentionMessagingError(.aboveImageRequiresAnImage, field: "headerPosition", "is ABOVE_IMAGE but the message has no image")
        }
        return message
    }

    private static func check(_ text: String, field: String, limit: Int, _ rule: RetentionMessagingError.Rule) throws(RetentionMessagingError) {
        let count = text.unicodeScalars.count
        guard count > 0, count <= limit else {
            throw RetentionMessagingError(rule, field: field, count == 0 ? "is empty" : "has \(count) characters; at most \(limit)")
        }
    }
}

/// Message and image identifiers: UUIDs the developer makes, sent lower-case (Apple states no
/// case; its Node library requires lower case, its Swift library sends upper case).
public enum RetentionIdentifier {
    /// `text` as a lower-case UUID; throws when it is not a UUID.
    public static func canonical(_ text: String, field: String) throws(RetentionMessagingError) -> String {
        guard let uuid = UUID(uuidString: text) else {
            throw RetentionMessagingError(.invalidIdentifier, field: field, "'\(text)' is not a UUID")
        }
        return uuid.uuidString.lowercased()
    }
}

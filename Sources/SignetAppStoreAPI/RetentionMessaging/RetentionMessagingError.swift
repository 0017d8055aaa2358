/// A Retention Messaging API request that breaks one of Apple's documented rules, found
/// before anything was sent: Apple would refuse it, so the client does not send it.
///
/// docs/retention.md §4 lists each rule with Apple's page.
public struct RetentionMessagingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule was broken; the raw value names the error Apple would answer, where it has one.
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// An identifier (message, image) that is not a UUID.
        case invalidIdentifier = "InvalidIdentifier"
        /// `header` empty or over 66 characters (HeaderTooLongError).
        case headerTooLong = "HeaderTooLongError"
        /// `body` empty or over 144 characters (BodyTooLongError).
        case bodyTooLong = "BodyTooLongError"
        /// An `altText` empty or over 150 characters (AltTextTooLongError).
        case altTextTooLong = "AltTextTooLongError"
        /// More than 5 bullet points (BadRequestTooManyBulletPointsError; Apple states no number,
        /// its libraries refuse more than 5).
        case tooManyBulletPoints = "BadRequestTooManyBulletPointsError"
        /// A bullet point's text empty or over 66 characters (BadRequestBulletPointTextTooLongError).
        case bulletPointTextTooLong = "BadRequestBulletPointTextTooLongError"
        /// `headerPosition: ABOVE_IMAGE` without an image (BadRequestAboveImageRequiresAnImageError).
        case aboveImageRequiresAnImage = "BadRequestAboveImageRequiresAnImageError"
        /// A realtime URL that is not `https://`, or is over 256 characters (BadRequestRealtimeUrlError).
        case invalidRealtimeURL = "BadRequestRealtimeUrlError"
        /// An image that is not a PNG, has transparency, or has the wrong size for its `imageSize` (InvalidImageError).
        case invalidImage = "InvalidImageError"
        /// An empty product id (InvalidProductIdError).
        case invalidProductId = "InvalidProductIdError"
        /// An empty or malformed locale (InvalidLocaleError).
        case invalidLocale = "InvalidLocaleError"
        /// An empty originalTransactionId for the performance test (InvalidPerformanceTestRequestError).
        case invalidPerformanceTestRequest = "InvalidPerformanceTestRequestError"
    }

    public var rule: Rule
    /// The field (or path parameter) the rule is about.
    public var field: String
    /// What the rule asks and what was given.
    public var message: String

    public init(_ rule: Rule, field: String, _ message: String) {
        self.rule = rule
        self.field = field
        self.message = message
    }

    public var description: String { "\(field) \(message) (Apple would answer \(rule.rawValue))" }
}

/// A parent or guardian withdrew consent for a child's use of the app (RESCIND_CONSENT):
/// every purchase made in that download of the app (its `appTransactionId`) answers
/// `restricted: true` until the restriction is cleared.
///
/// Kept after it is cleared, so a RESCIND_CONSENT signed before the clearing (Apple retries,
/// delivers late) does not restrict again.
public struct ConsentRestriction: Sendable, Hashable, Codable {
    /// The app download (appTransactionId) whose consent was withdrawn.
    public var appTransactionId: String
    /// The app's bundle id, from the notification.
    public var bundleId: String?
    /// `Sandbox` or `Production`, from the notification.
    public var environment: String?
    /// The RESCIND_CONSENT's signedDate (ms since 1970).
    public var rescindedAt: Int64
    /// The RESCIND_CONSENT notification that recorded it.
    public var notificationUUID: String?
    /// When it was cleared (ms since 1970): the signedDate of a later notification about the
    /// same app transaction, or the time of the backend's call; nil while in force.
    public var clearedAt: Int64?
    /// Who cleared it: `notification <uuid>`, or what the backend's call or the CLI named.
    public var clearedBy: String?

    /// A restriction as recorded; `clearedAt` and `clearedBy` stay nil while it is in force.
    public init(
        appTransactionId: String, bundleId: String? = nil, environment: String? = nil, rescindedAt: Int64,
        notificationUUID: String? = nil, clearedAt: Int64? = nil, clearedBy: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.environment = environment
        self.rescindedAt = rescindedAt
        self.notificationUUID = notificationUUID
        self.clearedAt = clearedAt
        self.clearedBy = clearedBy
    }

    /// Whether access is restricted now.
    public var isInForce: Bool { clearedAt == nil }
}

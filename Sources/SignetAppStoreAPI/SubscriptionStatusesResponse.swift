public import AppStoreModels

/// Get All Subscription Statuses: the latest transaction and renewal info of every
/// subscription of a customer, per subscription group.
public struct SubscriptionStatusesResponse: Codable, Sendable, Hashable {
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [SubscriptionGroupStatus]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        environment = try container.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        bundleId = try container.decodeIfPresent(String.self, forKey: .bundleId)
        appAppleId = try container.decodeIfPresent(Int64.self, forKey: .appAppleId)
        // Required: a 200 `{}` is not "no subscriptions" (a reconcile would confirm nothing from it).
        data = try container.decode([SubscriptionGroupStatus].self, forKey: .data)
    }
}

/// The subscriptions of one subscription group.
public struct SubscriptionGroupStatus: Codable, Sendable, Hashable {
    public var subscriptionGroupIdentifier: String?
    public var lastTransactions: [LastTransaction]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        subscriptionGroupIdentifier = try container.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        lastTransactions = try container.decode([LastTransaction].self, forKey: .lastTransactions)
    }
}

/// One subscription's status and its latest signed transaction and renewal info.
public struct LastTransaction: Codable, Sendable, Hashable {
    /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked (open: later values pass through).
    public var status: SubscriptionStatus?
    public var originalTransactionId: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
}

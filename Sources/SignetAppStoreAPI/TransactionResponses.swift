public import AppStoreModels

/// Get Transaction Info: one signed transaction.
public struct TransactionInfoResponse: Codable, Sendable, Hashable {
    public var signedTransactionInfo: String
}

/// One page of Get Transaction History (v2): the customer's signed transactions.
public struct TransactionHistoryResponse: Codable, Sendable, Hashable {
    /// Pass it as `revision` to get the next page.
    public var revision: String?
    public var hasMore: Bool
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?
    public var signedTransactions: [String]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        revision = try container.decodeIfPresent(String.self, forKey: .revision)
        // Required: a 200 `{}` must fail the page, never end the history as "no more pages".
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        bundleId = try container.decodeIfPresent(String.self, forKey: .bundleId)
        appAppleId = try container.decodeIfPresent(Int64.self, forKey: .appAppleId)
        environment = try container.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        signedTransactions = try container.decode([String].self, forKey: .signedTransactions)
    }
}

/// A bare transaction id found by ``AppStoreServerAPIClient/lookUpTransaction(transactionId:)``,
/// and the store that knew it.
public struct TransactionLookup: Sendable, Hashable {
    public var signedTransactionInfo: String
    /// `.production`, or `.sandbox` when Production did not know the id (TestFlight, App Review).
    public var environment: AppStoreEnvironment
}

/// Look Up Order ID's answer.
public struct OrderLookupResponse: Codable, Sendable, Hashable {
    /// 0: the order is valid and holds at least one purchase of this app; 1: invalid, or none of this app's.
    public var status: Int
    /// The order's transactions, signed by Apple (absent when `status` is 1).
    public var signedTransactions: [String]?

    /// Whether Apple knows the order as one of this app's.
    public var isValid: Bool { status == 0 }
}

/// One page of Get Refund History (v2): refunded transactions, oldest refund first, 20 at most.
public struct RefundHistoryResponse: Codable, Sendable, Hashable {
    public var signedTransactions: [String]
    /// Pass it as `revision` for the next page (and keep the last one to ask only for newer refunds later).
    public var revision: String
    public var hasMore: Bool
}

/// Extend a Subscription Renewal Date's answer.
public struct ExtendRenewalDateResponse: Codable, Sendable, Hashable {
    /// The new expiry (ms since 1970), when extended.
    public var effectiveDate: Int64?
    public var originalTransactionId: String?
    /// Whether the renewal date moved.
    public var success: Bool
    public var webOrderLineItemId: String?
}

/// Extend Subscription Renewal Dates for All Active Subscribers' answer: Apple works on it
/// for hours or days; ask ``AppStoreServerAPIClient/massExtensionStatus(productId:requestIdentifier:)``.
public struct MassExtendRenewalDateResponse: Codable, Sendable, Hashable {
    public var requestIdentifier: String
}

/// Get Status of Subscription Renewal Date Extensions' answer.
public struct MassExtendRenewalDateStatusResponse: Codable, Sendable, Hashable {
    public var requestIdentifier: String?
    /// Whether Apple finished; the date and counts come only then.
    public var complete: Bool
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(
        requestIdentifier: String?, complete: Bool, completeDate: Int64? = nil, succeededCount: Int64? = nil, failedCount: Int64? = nil
    ) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

/// Get App Transaction Info's answer.
public struct AppTransactionInfoResponse: Codable, Sendable, Hashable {
    /// The customer's app transaction, signed by Apple.
    public var signedAppTransactionInfo: String
}

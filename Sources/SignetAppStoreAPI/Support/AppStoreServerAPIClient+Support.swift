public import AppStoreModels
import NIOHTTP1
public import SignetJWS

// Apple's customer-support calls (docs/support.md): Look Up Order ID, Get Refund History,
// renewal-date extensions (one subscription, or every active subscriber with its status), Set
// App Account Token and Get App Transaction Info. Each request is checked against Apple's
// documented rules before it is sent (``SupportCallError``), spends its endpoint's budget
// (Apple's rate-limits page) and is retried like every call: a retried extension carries the
// same requestIdentifier, which is how Apple asks a timed-out one to be sent again.
extension AppStoreServerAPIClient {
    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the purchases of the order id on
    /// the customer's App Store receipt. Production only (Apple does not serve it in Sandbox):
    /// a Sandbox client throws ``SupportCallError`` without sending. An unknown order is no
    /// error: `status` 1 and no transactions.
    public func lookUpOrder(orderId: String) async throws -> OrderLookupResponse {
        try SupportRules.id(orderId, field: "orderId")
        guard configuration.environment == .production else {
            throw SupportCallError(.notInSandbox, field: "orderId", "cannot be looked up in Sandbox: Apple serves Look Up Order ID in Production only")
        }
        return try await transport.send(
            AppStoreAPICall(method: .GET, path: "/inApps/v1/lookup/" + PercentEncoding.encoded(orderId), endpointClass: .orderLookup),
            in: .production, as: OrderLookupResponse.self)
    }

    /// One page of Get Refund History v2 (`GET /inApps/v2/refund/lookup/{transactionId}`), for
    /// any transaction id of the customer; `revision` from the previous page (nil for the first).
    public func refundHistoryPage(
        transactionId: String, revision: String? = nil, in environment: AppStoreEnvironment? = nil
    ) async throws -> RefundHistoryResponse {
        try SupportRules.id(transactionId, field: "transactionId")
        let call = AppStoreAPICall(
            method: .GET, path: "/inApps/v2/refund/lookup/" + PercentEncoding.encoded(transactionId),
            query: revision.map { [("revision", $0)] } ?? [], endpointClass: .refundHistory)
        return try await transport.send(call, in: try store(environment), as: RefundHistoryResponse.self)
    }

    /// Every refunded transaction of the customer, every page, oldest refund first, each
    /// verified by `verifier` (nothing unverified is returned).
    public func refundHistory(
        transactionId: String, verifier: AppStoreVerifier, in environment: AppStoreEnvironment? = nil
    ) async throws -> [VerifiedTransaction] {
        var refunds: [VerifiedTransaction] = []
        var revision: String?
        while true {
            let page = try await refundHistoryPage(transactionId: transactionId, revision: revision, in: environment)
            for signed in page.signedTransactions { refunds.append(try verifier.verifyTransaction(signed)) }
            guard page.hasMore else { return refunds }
            guard page.revision != revision else {
                throw AppStoreAPIError(.invalidResponse, endpoint: "GET /inApps/v2/refund/lookup", errorMessage: "hasMore without a new revision")
            }
            revision = page.revision
        }
    }

    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`).
    /// Irreversible; Apple emails the customer and sends RENEWAL_EXTENDED. Apple refuses an
    /// ineligible subscription with 403: 4030004 (not active, a free offer period, billing
    /// retry, two extensions in 365 days), 4030005 (the maximum reached), 4030007 (family shared).
    public func extendRenewalDate(
        originalTransactionId: String, _ request: ExtendRenewalDateRequest, in environment: AppStoreEnvironment? = nil
    ) async throws -> ExtendRenewalDateResponse {
        try SupportRules.id(originalTransactionId, field: "originalTransactionId")
        let sent = try request.validated()
        let call = AppStoreAPICall(
            method: .PUT, path: "/inApps/v1/subscriptions/extend/" + PercentEncoding.encoded(originalTransactionId),
            body: try AppStoreJSON.encode(sent), endpointClass: .renewalExtension)
        return try await transport.send(call, in: try store(environment), as: ExtendRenewalDateResponse.self)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers
    /// (`POST /inApps/v1/subscriptions/extend/mass`). Apple answers at once and works for hours
    /// or days: follow it with ``massExtensionStatus(productId:requestIdentifier:)`` or the
    /// RENEWAL_EXTENSION SUMMARY notification. The same requestIdentifier again answers 200
    /// without extending twice.
    public func massExtendRenewalDates(_ request: MassExtendRenewalDateRequest) async throws -> MassExtendRenewalDateResponse {
        let sent = try request.validated()
        let call = AppStoreAPICall(
            method: .POST, path: "/inApps/v1/subscriptions/extend/mass", body: try AppStoreJSON.encode(sent), endpointClass: .massExtension)
        return try await transport.send(call, in: configuration.environment, as: MassExtendRenewalDateResponse.self)
    }

    /// Get Status of Subscription Renewal Date Extensions
    /// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`); an unknown
    /// pair answers 404 (4040009).
    public func massExtensionStatus(productId: String, requestIdentifier: String) async throws -> MassExtendRenewalDateStatusResponse {
        guard !productId.isEmpty else { throw SupportCallError(.invalidProductId, field: "productId", "is empty") }
        let id = try SupportRules.requestIdentifier(requestIdentifier, mustBeUUID: true)
        let call = AppStoreAPICall(
            method: .GET, path: "/inApps/v1/subscriptions/extend/mass/" + PercentEncoding.encoded(productId) + "/" + id,
            endpointClass: .massExtension)
        return try await transport.send(call, in: configuration.environment, as: MassExtendRenewalDateStatusResponse.self)
    }

    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`):
    /// replaces the purchase's token, for its current and later transactions (not past ones).
    /// The id must be an original transaction id (4000187); family-shared purchases are refused (4000185).
    public func setAppAccountToken(
        originalTransactionId: String, _ token: AppAccountToken, in environment: AppStoreEnvironment? = nil
    ) async throws {
        try SupportRules.id(originalTransactionId, field: "originalTransactionId")
        struct Body: Encodable { var appAccountToken: String }
        let call = AppStoreAPICall(
            method: .PUT, path: "/inApps/v1/transactions/" + PercentEncoding.encoded(originalTransactionId) + "/appAccountToken",
            body: try AppStoreJSON.encode(Body(appAccountToken: token.description)), endpointClass: .appAccountToken)
        try await transport.send(call, in: try store(environment)) { _, _ in () }
    }

    /// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`),
    /// for any transaction id of the customer; 4040019 when the customer has no app transaction.
    public func appTransactionInfo(transactionId: String, in environment: AppStoreEnvironment? = nil) async throws -> AppTransactionInfoResponse {
        try SupportRules.id(transactionId, field: "transactionId")
        let call = AppStoreAPICall(method: .GET, path: "/inApps/v1/transactions/appTransactions/" + PercentEncoding.encoded(transactionId))
        return try await transport.send(call, in: try store(environment), as: AppTransactionInfoResponse.self)
    }
}

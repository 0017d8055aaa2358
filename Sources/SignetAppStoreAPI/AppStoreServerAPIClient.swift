public import AppStoreModels
public import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import SignetCore
public import SignetJWS
import Synchronization

/// A client of Apple's App Store Server API for one app (docs/appstore-api.md).
///
/// Every call authenticates with a fresh-enough ES256 JWT, waits for the shared rate
/// limiter's slot of its (host, app, endpoint class) bucket, retries what Apple documents
/// as retryable with capped, jittered backoff, honours `Retry-After` on 429 for every caller
/// of the bucket, and throws ``AppStoreAPIError`` otherwise (or `CancellationError`).
///
/// Signed data comes back as Apple's strings: TLS is no reason to trust them. Verify each
/// with the webhook's `AppStoreVerifier` (the `verified(by:)` conveniences do), or use the
/// calls that take a verifier.
///
/// Thread safety: immutable apart from the HTTP client's shutdown flag; share one instance.
/// Call ``shutdown()`` when done.
public final class AppStoreServerAPIClient: Sendable {
    public let configuration: AppStoreAPIConfiguration
    let transport: AppStoreAPITransport
    /// The HTTP client this instance created and must shut down (nil when given one).
    private let ownedHTTPClient: Mutex<HTTPClient?>

    /// - Parameters:
    ///   - httpClient: an existing client to share (not shut down by ``shutdown()``); nil
    ///     creates one with the configuration's timeouts.
    ///   - configuration: the key, the bundle id, the environment, the base URL and the timeouts.
    ///   - rateLimiter: the budget keeper; the process-wide ``AppStoreAPIRateLimiter/shared``
    ///     unless a test isolates itself.
    ///   - logger: where retries and pauses are logged.
    public init(
        configuration: AppStoreAPIConfiguration, httpClient: HTTPClient? = nil,
        rateLimiter: AppStoreAPIRateLimiter = .shared, logger: Logger = Logger(label: "signet.appstore-api")
    ) {
        var httpConfiguration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(configuration.connectTimeout.clampedNanoseconds)))
        // Signet exports no traces; without this every request pays for spans of the global no-op tracer.
        httpConfiguration.tracing.tracer = nil
        let client = httpClient ?? HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
        self.configuration = configuration
        self.ownedHTTPClient = Mutex(httpClient == nil ? client : nil)
        self.transport = AppStoreAPITransport(
            configuration: configuration, httpClient: client, limiter: rateLimiter,
            signer: AppStoreAPITokenSigner(credentials: configuration.credentials), logger: logger)
    }

    deinit {
        // Dropped without shutdown() (a caller that threw): AsyncHTTPClient would trap in its
        // deinit, ending the process; shut it down in the background instead.
        if let leftover = ownedHTTPClient.withLock({ $0 }) { leftover.shutdown(queue: .global()) { _ in } }
    }

    /// Shuts down the HTTP client this instance created (a given one is left alone).
    public func shutdown() async throws {
        let owned = ownedHTTPClient.withLock { current in
            defer { current = nil }
            return current
        }
        try await owned?.shutdown()
    }

    // MARK: - Get Notification History

    /// One page of Get Notification History (`POST /inApps/v1/notifications/history`), as
    /// Apple answers it. 4000012/4000014/4000017 are thrown: ``notificationHistory(_:resumingAfter:)``
    /// handles them.
    public func notificationHistoryPage(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil
    ) async throws -> NotificationHistoryResponse {
        try await notificationHistoryPage(encodedRequest: AppStoreJSON.encode(request), paginationToken: paginationToken)
    }

    /// One page, with the request body already encoded: every page of a window sends the same
    /// one, and encoding it with `JSONEncoder` for each page showed in a backfill's profile.
    func notificationHistoryPage(encodedRequest body: [UInt8], paginationToken: String?) async throws -> NotificationHistoryResponse {
        let call = AppStoreAPICall(
            method: .POST, path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: body)
        return try await decode(NotificationHistoryResponse.self, call)
    }

    /// Every page of a window, in order, starting after `paginationToken` when resuming.
    ///
    /// Sends the same body on every page. A refused token (4000014 invalid, 4000017 expired)
    /// restarts the window from its first page; a start date beyond Apple's lookback
    /// (4000012) is clamped to the lookback with a logged warning. Both are reported on the
    /// page that follows (``NotificationHistoryPage/restartedWindow``,
    /// ``NotificationHistoryPage/request``), so a resumable consumer can note them.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, resumingAfter paginationToken: String? = nil
    ) -> NotificationHistoryPages {
        NotificationHistoryPages(client: self, request: request, paginationToken: paginationToken)
    }

    // MARK: - Subscriptions and transactions

    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`), for any
    /// transaction id of the customer; `status` filters (empty: all). Asks `environment`'s
    /// store: nil is the configured one; a Production client may ask Sandbox (its fallback
    /// host, for a purchase made there), never the other way round.
    public func subscriptionStatuses(
        transactionId: String, status: [SubscriptionStatus] = [], in environment: AppStoreEnvironment? = nil
    ) async throws -> SubscriptionStatusesResponse {
        try await transport.send(
            Self.statusesCall(transactionId, status: status), in: try store(environment), as: SubscriptionStatusesResponse.self)
    }

    /// Get All Subscription Statuses for a purchase whose store is not known (a bare id, a
    /// purchase stored before Signet recorded environments), as ``lookUpTransaction(transactionId:)``
    /// looks one up: Production, then Sandbox on 4040010 or 401.
    public func lookUpSubscriptionStatuses(transactionId: String) async throws -> (SubscriptionStatusesResponse, AppStoreEnvironment) {
        try await inWhicheverStore(Self.statusesCall(transactionId, status: []), what: "purchase \(transactionId)")
    }

    /// Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`) in the configured
    /// environment only.
    public func transactionInfo(transactionId: String) async throws -> TransactionInfoResponse {
        try await decode(TransactionInfoResponse.self, Self.transactionInfoCall(transactionId))
    }

    /// A bare transaction id, in whichever store knows it, as Apple asks servers to do.
    ///
    /// Configured for Production: asks Production; on 4040010 asks again after
    /// ``AppStoreAPIConfiguration/notFoundRetryDelay`` (a new id takes a moment to appear),
    /// then the Sandbox host (TestFlight and App Review purchases live there). A 401 from
    /// Production also goes to Sandbox: an app with no Production release yet answers 401
    /// there, and its App Review purchases are in Sandbox; when Sandbox refuses too, the
    /// Production 401 is thrown. Configured for Sandbox: asks Sandbox only. The Sandbox
    /// fallback spends Sandbox's budget, at Sandbox's rate.
    public func lookUpTransaction(transactionId: String) async throws -> TransactionLookup {
        let (info, environment) = try await inWhicheverStore(
            Self.transactionInfoCall(transactionId), as: TransactionInfoResponse.self, what: "transaction \(transactionId)")
        return TransactionLookup(signedTransactionInfo: info.signedTransactionInfo, environment: environment)
    }

    /// `call` in the configured store; from a Production client, again after
    /// ``AppStoreAPIConfiguration/notFoundRetryDelay`` on 4040010 (a new id takes a moment to
    /// appear), then in Sandbox on 4040010 or 401 (TestFlight and App Review purchases, an app
    /// with no Production release). Refused by both, Production's 401 is thrown.
    private func inWhicheverStore<Answer: Decodable>(
        _ call: AppStoreAPICall, as _: Answer.Type = Answer.self, what: String
    ) async throws -> (Answer, AppStoreEnvironment) {
        guard configuration.environment == .production else {
            return (try await transport.send(call, in: configuration.environment, as: Answer.self), configuration.environment)
        }
        let productionRefusal: AppStoreAPIError
        do {
            do {
                return (try await transport.send(call, in: .production, as: Answer.self), .production)
            } catch let error as AppStoreAPIError where error.isTransactionIdNotFound {
                try await Task.sleep(for: configuration.notFoundRetryDelay)
                return (try await transport.send(call, in: .production, as: Answer.self), .production)
            }
        } catch let error as AppStoreAPIError where error.isTransactionIdNotFound || error.kind == .unauthorized {
            productionRefusal = error
        }
        transport.logger.info(
            "App Store Server API: \(what) \(productionRefusal.kind == .unauthorized ? "refused (401) by Production" : "not in Production"); asking Sandbox")
        do {
            return (try await transport.send(call, in: .sandbox, as: Answer.self), .sandbox)
        } catch let error as AppStoreAPIError where error.kind == .unauthorized && productionRefusal.kind == .unauthorized {
            // Refused by both: the key (or its team) is the problem, as Production said first.
            throw productionRefusal
        }
    }

    /// Whether this client can ask `environment`'s store: the configured one, or Sandbox (its
    /// fallback host) from a Production client.
    public func reaches(_ environment: AppStoreEnvironment) -> Bool {
        environment == configuration.environment || (environment == .sandbox && configuration.environment == .production)
    }

    /// The store to ask: the configured one, or Sandbox from a Production client.
    func store(_ environment: AppStoreEnvironment?) throws -> AppStoreEnvironment {
        guard let environment else { return configuration.environment }
        guard reaches(environment) else {
            throw AppStoreAPIError(
                .permanent, endpoint: "App Store Server API",
                errorMessage: "a client configured for \(configuration.environment.rawValue) cannot ask \(environment.rawValue)")
        }
        return environment
    }

    /// One page of Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`);
    /// `revision` from the previous page (nil for the first).
    public func transactionHistoryPage(transactionId: String, revision: String? = nil) async throws -> TransactionHistoryResponse {
        let call = AppStoreAPICall(
            method: .GET, path: "/inApps/v2/history/" + PercentEncoding.encoded(transactionId),
            query: revision.map { [("revision", $0)] } ?? [])
        return try await decode(TransactionHistoryResponse.self, call)
    }

    /// The customer's whole transaction history, every page, each transaction verified by
    /// `verifier` and kept once per `transactionId` (a transaction that appears again, e.g.
    /// updated by a refund, keeps its first position and its most recently signed version).
    ///
    /// Throws ``AppStoreAPIError``, or the `RecordRejection` of the first transaction that
    /// fails verification (nothing unverified is returned).
    public func transactionHistory(transactionId: String, verifier: AppStoreVerifier) async throws -> [VerifiedTransaction] {
        var kept: [VerifiedTransaction] = []
        /// Where each transactionId's version is in `kept`.
        var positions: [String: Int] = [:]
        var revision: String?
        repeat {
            let page = try await transactionHistoryPage(transactionId: transactionId, revision: revision)
            for signed in page.signedTransactions {
                let transaction = try verifier.verifyTransaction(signed)
                // The signed payload carries the id; only a verified one is trusted to. One
                // without an id is kept on its own, never merged with another such one.
                guard let id = transaction.payload.transactionId, let index = positions[id] else {
                    if let id = transaction.payload.transactionId { positions[id] = kept.count }
                    kept.append(transaction)
                    continue
                }
                let seenDate = kept[index].payload.signedDate?.millisecondsSince1970 ?? .min
                if (transaction.payload.signedDate?.millisecondsSince1970 ?? .min) >= seenDate { kept[index] = transaction }
            }
            guard page.hasMore else { break }
            guard let next = page.revision, next != revision else {
                throw AppStoreAPIError(
                    .invalidResponse, endpoint: "GET /inApps/v2/history", errorMessage: "hasMore without a new revision")
            }
            revision = next
        } while true
        return kept
    }

    // MARK: - Send Consumption Information

    /// Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{transactionId}`):
    /// answers a `CONSUMPTION_REQUEST` for `transactionId` (the id that notification carries)
    /// with `information` (docs/consumption.md).
    ///
    /// The body is checked against every rule Apple documents before anything is sent: a body
    /// Apple would refuse throws ``ConsumptionInformationError`` and no request goes out. Apple
    /// answers 202 with no body; any 2xx counts as received (sending again what Apple took would
    /// answer twice). Spends the consumption bucket (Apple: 50/s Production, 5/s Sandbox) and
    /// retries 429 and Apple's retryable errors like every call; any other refusal throws
    /// ``AppStoreAPIError``. A transaction of the Advanced Commerce API is refused by this
    /// endpoint (AdvancedCommerceTransactionNotSupportedError): answer those with
    /// ``sendConsumptionInformationV1(transactionId:_:in:)``.
    ///
    /// - Parameters:
    ///   - transactionId: the transaction Apple asked about (the request's `transactionId`).
    ///   - information: what to send, as Apple documents the request body.
    ///   - environment: the store the purchase belongs to (the notification's
    ///     `environment`); nil is the configured one, and a Production client may answer a Sandbox
    ///     request, never the other way round.
    public func sendConsumptionInformation(
        transactionId: String, _ information: ConsumptionInformation, in environment: AppStoreEnvironment? = nil
    ) async throws {
        try information.validate()
        try await sendConsumption(path: "/inApps/v2/transactions/consumption/", transactionId, try AppStoreJSON.encode(information), in: environment)
    }

    /// Send Consumption Information V1 (`PUT /inApps/v1/transactions/consumption/{transactionId}`):
    /// the answer to a `CONSUMPTION_REQUEST` about a purchase made through the Advanced Commerce
    /// API, which v2 refuses; for any other purchase use
    /// ``sendConsumptionInformation(transactionId:_:in:)``. Checked, sent, paid for and retried
    /// like it (same bucket).
    public func sendConsumptionInformationV1(
        transactionId: String, _ information: ConsumptionInformationV1, in environment: AppStoreEnvironment? = nil
    ) async throws {
        try information.validate()
        try await sendConsumption(path: "/inApps/v1/transactions/consumption/", transactionId, try AppStoreJSON.encode(information), in: environment)
    }

    /// The PUT both versions make: `body` already validated, 202 (any 2xx) expected.
    private func sendConsumption(path: String, _ transactionId: String, _ body: [UInt8], in environment: AppStoreEnvironment?) async throws {
        guard !transactionId.isEmpty else {
            throw ConsumptionInformationError(.emptyTransactionId, field: "transactionId", "must be the CONSUMPTION_REQUEST's transaction id, not empty")
        }
        let call = AppStoreAPICall(method: .PUT, path: path + PercentEncoding.encoded(transactionId), body: body, endpointClass: .consumption)
        let logger = transport.logger
        try await transport.send(call, in: try store(environment)) { status, _ in
            if status != 202 { logger.notice("App Store Server API: \(call.endpoint) answered \(status), not 202; taken as received") }
        }
    }

    // MARK: - Test notifications

    /// Request a Test Notification (`POST /inApps/v1/notifications/test`): Apple sends a
    /// TEST notification to the app's configured URL.
    public func requestTestNotification() async throws -> TestNotificationResponse {
        try await decode(
            TestNotificationResponse.self,
            AppStoreAPICall(method: .POST, path: "/inApps/v1/notifications/test", endpointClass: .testNotification))
    }

    /// Get Test Notification Status (`GET /inApps/v1/notifications/test/{token}`).
    public func testNotificationStatus(token: String) async throws -> TestNotificationStatusResponse {
        try await decode(
            TestNotificationStatusResponse.self,
            AppStoreAPICall(
                method: .GET, path: "/inApps/v1/notifications/test/" + PercentEncoding.encoded(token),
                endpointClass: .testNotification))
    }

    // MARK: - Plumbing

    private static func statusesCall(_ transactionId: String, status: [SubscriptionStatus]) -> AppStoreAPICall {
        AppStoreAPICall(
            method: .GET, path: "/inApps/v1/subscriptions/" + PercentEncoding.encoded(transactionId),
            query: status.map { ("status", String($0.rawValue)) })
    }

    private static func transactionInfoCall(_ transactionId: String) -> AppStoreAPICall {
        AppStoreAPICall(method: .GET, path: "/inApps/v1/transactions/" + PercentEncoding.encoded(transactionId))
    }

    /// `call` asked of the configured store, its answer decoded (an undecodable 2xx is retried,
    /// then thrown as `invalidResponse`).
    private func decode<T: Decodable>(_ type: T.Type, _ call: AppStoreAPICall) async throws -> T {
        try await transport.send(call, in: configuration.environment, as: type)
    }

    /// The logger, for the pager's warnings.
    var logger: Logger { transport.logger }
}

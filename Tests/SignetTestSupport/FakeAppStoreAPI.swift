public import AppStoreModels
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import SignetCore
import Synchronization

/// A fake App Store Server API: a real HTTP server on 127.0.0.1 (a free port) that answers
/// like Apple's, for tests of the API client and of whatever pages through it.
///
/// Every request's JWT is checked as Apple does (``FakeAppStoreAPIJWTCheck``); a bad one gets
/// a 401 with no body. Serves Get Notification History (20 a page, filtered by the window,
/// `onlyFailures`, `notificationType`/`notificationSubtype` and `transactionId`, opaque
/// pagination tokens, 4000012 beyond the environment's lookback), Get All Subscription
/// Statuses (every group and purchase of a customer, in no particular order), Get Transaction
/// Info (4040010 for unknown ids), Get Transaction History v2
/// (paged by revision), the test-notification endpoints and Send Consumption Information v2
/// (each body judged by ``FakeConsumptionRules``: 202, or Apple's 400, the body kept in
/// ``rejectedConsumptionBodies``; 4040010 for a transaction not added with
/// ``addConsumptionTransaction(_:productType:advancedCommerce:)``). Faults are scripted per route
/// (``script(_:on:)``) and every request is recorded with its arrival time (``requests``).
/// Stop it with ``stop()``.
public final class FakeAppStoreAPI: Sendable {
    /// The routes, for scripting faults and reading the log.
    public enum Route: String, Sendable, Hashable, CaseIterable {
        case notificationHistory, subscriptionStatuses, transactionInfo, transactionHistory
        case requestTestNotification, testNotificationStatus
        /// Send Consumption Information v2, and V1 (Advanced Commerce API purchases).
        case consumption, consumptionV1
        /// The Retention Messaging API's configuration endpoints (``FakeRetentionMessaging``).
        case realtimeURL, retentionMessage, messageList, retentionImage, imageList, defaultMessage, performanceTest,
            performanceTestResult
        /// Apple's customer-support endpoints (``FakeSupport``).
        case orderLookup, refundHistory, renewalExtension, massExtension, massExtensionStatus, appAccountToken, appTransactionInfo

        var isSupport: Bool {
            switch self {
            case .orderLookup, .refundHistory, .renewalExtension, .massExtension, .massExtensionStatus, .appAccountToken, .appTransactionInfo:
                true
            default: false
            }
        }

        var isRetentionMessaging: Bool {
            switch self {
            case .realtimeURL, .retentionMessage, .messageList, .retentionImage, .imageList, .defaultMessage, .performanceTest,
                .performanceTestResult: true
            default: false
            }
        }
    }

    /// An answer the fake gives instead of the real one, once, to the next request of a route.
    public enum Fault: Sendable, Hashable {
        /// 429 `{"errorCode":4290000}` with `Retry-After` = now + the duration in UNIX ms.
        case tooManyRequests(retryAfter: Duration)
        /// 429 with exactly this `Retry-After` header (nil: none).
        case tooManyRequestsHeader(String?)
        /// This status with `{"errorCode", "errorMessage"}` (no body when the code is nil).
        case error(status: Int, errorCode: Int?)
        /// This status with exactly this body (e.g. one of Apple's error fixtures).
        case raw(status: Int, body: [UInt8])
        /// 401, no body.
        case unauthorized
        /// Waits this long before answering normally.
        case delay(Duration)
    }

    /// A notification the fake's history holds.
    public struct StoredNotification: Sendable {
        public var signedPayload: String
        /// When Apple "sent" it (UNIX ms): what the window filters on.
        public var sentDate: Int64
        /// Whether every delivery attempt failed (`onlyFailures`).
        public var failed: Bool
        public var notificationType: String?
        public var subtype: String?
        /// Transaction ids it is about (`transactionId` filter).
        public var transactionIds: Set<String>

        public init(
            signedPayload: String, sentDate: Int64, failed: Bool = false, notificationType: String? = nil,
            subtype: String? = nil, transactionIds: Set<String> = []
        ) {
            self.signedPayload = signedPayload
            self.sentDate = sentDate
            self.failed = failed
            self.notificationType = notificationType
            self.subtype = subtype
            self.transactionIds = transactionIds
        }
    }

    /// A signed transaction the fake's store holds.
    public struct StoredTransaction: Sendable {
        public var transactionId: String
        public var originalTransactionId: String
        public var signedTransactionInfo: String
        public var signedRenewalInfo: String?
        public var status: Int

        public init(
            transactionId: String, originalTransactionId: String, signedTransactionInfo: String,
            signedRenewalInfo: String? = nil, status: Int = 1
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
            self.status = status
        }
    }

    /// A Send Consumption Information body the fake refused, as Apple would have.
    public struct RejectedConsumption: Sendable {
        public var transactionId: String
        public var body: [UInt8]
        public var refusal: FakeConsumptionRules.Refusal
    }

    /// One request as it arrived.
    public struct RecordedRequest: Sendable {
        public var route: Route
        public var method: String
        /// The path's id parameter (transaction id, test-notification token), if any.
        public var pathParameter: String?
        public var query: [String: [String]]
        public var body: [UInt8]
        /// Wall clock at arrival, UNIX ms (what a `Retry-After` is compared with).
        public var arrivalMilliseconds: Int64
        /// Monotonic arrival (for rates).
        public var arrival: ContinuousClock.Instant
        /// Why the JWT was refused; nil when accepted.
        public var authRefusal: String?
        /// The status answered.
        public var status: Int
        /// The `Retry-After` header answered (429s).
        public var retryAfter: String?

        /// The body as a JSON object (history requests).
        public var jsonBody: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }
    }

    public let environment: AppStoreEnvironment
    /// The retention messaging configuration this fake keeps.
    public let retention: FakeRetentionMessaging
    /// The customer-support endpoints' data.
    public let support: FakeSupport
    /// `http://127.0.0.1:PORT`.
    public let baseURL: String
    public let jwtCheck: FakeAppStoreAPIJWTCheck

    private struct State {
        var notifications: [StoredNotification] = []
        var transactions: [StoredTransaction] = []
        /// Get Transaction History entries per original transaction id, in order (may repeat).
        var history: [String: [String]] = [:]
        /// Purchases of one customer, by subscription group: Get All Subscription Statuses for
        /// any of them lists the latest transaction of each (``linkPurchases(_:)``).
        var customers: [[String: [String]]] = []
        var faults: [Route: [Fault]] = [:]
        var tokens: [String: (window: String, offset: Int)] = [:]
        var testNotifications: [String: String?] = [:]
        var log: [RecordedRequest] = []
        var pageSize = 20
        var historyPageSize = 20
        var delay: Duration = .zero
        var testNotificationPayload: String?
        var testNotificationResults: [String] = ["SUCCESS"]
        /// Transactions Send Consumption Information knows: product type, and whether the
        /// Advanced Commerce API sold it.
        var consumptionTransactions: [String: (productType: String, advancedCommerce: Bool, deadline: Int64?, consented: Bool)] = [:]
        var rejectedConsumption: [RejectedConsumption] = []
        /// Answers accepted (202) per transaction, and those that came after the deadline.
        var acceptedConsumption: [String: Int] = [:]
        var lateConsumption: [String] = []
        var consentlessConsumption: [String] = []
    }

    private let state = Mutex(State())
    private let server: Task<Void, any Error>
    /// Runs the server, so ``stop()`` can shut it down gracefully: cancelling a NIO server
    /// with an accepted connection not yet served traps ("Deinited NIOAsyncWriter without
    /// calling finish()", apple/swift-nio#3481).
    private let group: ServiceGroup

    private init(
        environment: AppStoreEnvironment, port: Int, jwtCheck: FakeAppStoreAPIJWTCheck, server: Task<Void, any Error>,
        group: ServiceGroup
    ) {
        self.environment = environment
        self.retention = FakeRetentionMessaging(production: environment == .production)
        self.support = FakeSupport(production: environment == .production)
        self.baseURL = "http://127.0.0.1:\(port)"
        self.jwtCheck = jwtCheck
        self.server = server
        self.group = group
    }

    /// Starts a fake store of `environment` (its lookback: 180 days Production, 30 Sandbox).
    public static func start(environment: AppStoreEnvironment = .sandbox, jwtCheck: FakeAppStoreAPIJWTCheck) async throws -> FakeAppStoreAPI {
        let box = Mutex<FakeAppStoreAPI?>(nil)
        let port = AsyncStream<Int>.makeStream()
        let router = Router()
        let routes: [(HTTPRequest.Method, String, Route)] = [
            (.post, "/inApps/v1/notifications/history", .notificationHistory),
            (.get, "/inApps/v1/subscriptions/:id", .subscriptionStatuses),
            (.get, "/inApps/v1/transactions/:id", .transactionInfo),
            (.get, "/inApps/v2/history/:id", .transactionHistory),
            (.post, "/inApps/v1/notifications/test", .requestTestNotification),
            (.get, "/inApps/v1/notifications/test/:id", .testNotificationStatus),
            (.put, "/inApps/v2/transactions/consumption/:id", .consumption),
            (.put, "/inApps/v1/transactions/consumption/:id", .consumptionV1),
            (.put, "/inApps/v1/messaging/realtime/url", .realtimeURL),
            (.get, "/inApps/v1/messaging/realtime/url", .realtimeURL),
            (.delete, "/inApps/v1/messaging/realtime/url", .realtimeURL),
            (.get, "/inApps/v1/messaging/message/list", .messageList),
            (.put, "/inApps/v1/messaging/message/:id", .retentionMessage),
            (.delete, "/inApps/v1/messaging/message/:id", .retentionMessage),
            (.get, "/inApps/v1/messaging/image/list", .imageList),
            (.put, "/inApps/v1/messaging/image/:id", .retentionImage),
            (.delete, "/inApps/v1/messaging/image/:id", .retentionImage),
            (.put, "/inApps/v1/messaging/default/:id/:locale", .defaultMessage),
            (.get, "/inApps/v1/messaging/default/:id/:locale", .defaultMessage),
            (.delete, "/inApps/v1/messaging/default/:id/:locale", .defaultMessage),
            (.post, "/inApps/v1/messaging/performanceTest", .performanceTest),
            (.get, "/inApps/v1/messaging/performanceTest/result/:id", .performanceTestResult),
            (.get, "/inApps/v1/lookup/:id", .orderLookup),
            (.get, "/inApps/v2/refund/lookup/:id", .refundHistory),
            (.put, "/inApps/v1/subscriptions/extend/:id", .renewalExtension),
            (.post, "/inApps/v1/subscriptions/extend/mass", .massExtension),
            (.get, "/inApps/v1/subscriptions/extend/mass/:id/:locale", .massExtensionStatus),
            (.put, "/inApps/v1/transactions/:id/appAccountToken", .appAccountToken),
            (.get, "/inApps/v1/transactions/appTransactions/:id", .appTransactionInfo),
        ]
        for (method, path, route) in routes {
            router.on(RouterPath(path), method: method) { request, context in
                guard let fake = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
                return try await fake.handle(
                    route, request, parameter: context.parameters.get("id"), locale: context.parameters.get("locale"))
            }
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                port.continuation.yield(channel.localAddress?.port ?? 0)
                port.continuation.finish()
            },
            // Stopping cancels the server, which Hummingbird reports as errors: not the test's business.
            logger: Logger(label: "fake-appstore-api", factory: { _ in SwiftLogNoOpLogHandler() }))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [app], logger: Logger(label: "fake-appstore-api", factory: { _ in SwiftLogNoOpLogHandler() })))
        let server = Task { try await group.run() }
        var bound = 0
        for await value in port.stream { bound = value }
        guard bound != 0 else {
            await group.triggerGracefulShutdown()
            throw FakeAppStoreAPIError("the fake App Store Server API did not start")
        }
        let fake = FakeAppStoreAPI(environment: environment, port: bound, jwtCheck: jwtCheck, server: server, group: group)
        box.withLock { $0 = fake }
        return fake
    }

    /// Stops the server: gracefully (answers in progress are finished), then waits for it.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await server.value
    }

    // MARK: - Content and scripting

    /// Adds notifications to the history (kept sorted by sent date).
    public func addNotifications(_ notifications: [StoredNotification]) {
        state.withLock { state in
            state.notifications += notifications
            state.notifications.sort { $0.sentDate < $1.sentDate }
        }
    }

    /// Adds transactions: found by Get Transaction Info and Get All Subscription Statuses, and
    /// appended to their original transaction's history.
    public func addTransactions(_ transactions: [StoredTransaction]) {
        state.withLock { state in
            state.transactions += transactions
            for transaction in transactions {
                state.history[transaction.originalTransactionId, default: []].append(transaction.signedTransactionInfo)
            }
        }
    }

    /// Appends raw entries to an original transaction's history (duplicates allowed).
    public func appendHistory(originalTransactionId: String, signedTransactions: [String]) {
        state.withLock { $0.history[originalTransactionId, default: []] += signedTransactions }
    }

    /// Makes purchases one customer's, by subscription group: Get All Subscription Statuses for
    /// any of them answers with every group and the latest transaction of each purchase, the
    /// groups and the items within them in an order that changes from answer to answer.
    public func linkPurchases(_ groups: [String: [String]]) {
        state.withLock { $0.customers.append(groups) }
    }

    /// Queues faults for the next requests of `route`, one per request, in order.
    public func script(_ faults: [Fault], on route: Route) {
        state.withLock { $0.faults[route, default: []] += faults }
    }

    /// Every pagination token issued so far answers 4000017 (expired) from now on.
    public func expirePaginationTokens() {
        state.withLock { state in
            for key in state.tokens.keys { state.tokens[key]?.offset = -1 }
        }
    }

    /// Waits this long before every answer (a realistic round trip).
    public func setResponseDelay(_ delay: Duration) { state.withLock { $0.delay = delay } }

    /// Notification-history page size (Apple: 20) and transaction-history page size.
    public func setPageSizes(notifications: Int = 20, transactions: Int = 20) {
        state.withLock { state in
            state.pageSize = notifications
            state.historyPageSize = transactions
        }
    }

    /// The `signedPayload` Get Test Notification Status answers with.
    public func setTestNotificationPayload(_ signedPayload: String?) { state.withLock { $0.testNotificationPayload = signedPayload } }

    /// The send attempts Get Test Notification Status reports (their `sendAttemptResult`s, in
    /// order); default one `SUCCESS`.
    public func setTestNotificationResults(_ results: [String]) { state.withLock { $0.testNotificationResults = results } }

    /// A transaction Send Consumption Information answers for: Apple's product `type`
    /// (`Consumable`, `Auto-Renewable Subscription`, ...), whether it is an Advanced Commerce
    /// API purchase (v2 refuses those), the deadline of its CONSUMPTION_REQUEST (UNIX ms; an
    /// answer after it is accepted and counted in ``lateConsumptionAnswers``), and whether its
    /// customer consented (an answer without consent is counted in ``consentlessConsumptionAnswers``).
    public func addConsumptionTransaction(
        _ transactionId: String, productType: String, advancedCommerce: Bool = false, deadline: Int64? = nil, consented: Bool = true
    ) {
        state.withLock { $0.consumptionTransactions[transactionId] = (productType, advancedCommerce, deadline, consented) }
    }

    /// Answers accepted for a customer who had not consented: a correct responder leaves this empty.
    public var consentlessConsumptionAnswers: [String] { state.withLock { $0.consentlessConsumption } }

    /// Transactions answered (202) more than once: a correct responder leaves this empty.
    public var duplicateConsumptionAnswers: [String] {
        state.withLock { $0.acceptedConsumption.filter { $0.value > 1 }.keys.sorted() }
    }

    /// Answers accepted after their request's deadline: a correct responder leaves this empty.
    public var lateConsumptionAnswers: [String] { state.withLock { $0.lateConsumption } }

    /// Every Send Consumption Information body refused so far (Apple's 400s): a correct client
    /// leaves this empty.
    public var rejectedConsumptionBodies: [RejectedConsumption] { state.withLock { $0.rejectedConsumption } }

    /// Every request so far, in arrival order.
    public var requests: [RecordedRequest] { state.withLock { $0.log } }

    /// The requests of one route.
    public func requests(_ route: Route) -> [RecordedRequest] { requests.filter { $0.route == route } }

    /// The fake's lookback for notification history.
    public var lookbackMilliseconds: Int64 { (environment == .production ? 180 : 30) * 86_400_000 }

    // MARK: - Answering

    private func handle(_ route: Route, _ request: Request, parameter: String?, locale: String? = nil) async throws -> Response {
        let arrival = ContinuousClock.now
        let arrivalMilliseconds = Self.nowMilliseconds()
        var request = request
        let body = Array(buffer: try await request.collectBody(upTo: 1 << 20))
        var query: [String: [String]] = [:]
        for (key, value) in request.uri.queryParameters { query[String(key), default: []].append(String(value)) }
        let refusal = jwtCheck.refusal(authorization: request.headers[.authorization])
        let (fault, delay) = state.withLock { state -> (Fault?, Duration) in
            // A refused JWT consumes no fault: Apple answers 401 before anything else.
            guard refusal == nil, var queue = state.faults[route], !queue.isEmpty else { return (nil, state.delay) }
            let fault = queue.removeFirst()
            state.faults[route] = queue
            return (fault, state.delay)
        }
        if delay > .zero { try await Task.sleep(for: delay) }
        func normally() -> Answer {
            if route.isSupport {
                let (status, json) = support.answer(
                    route, body: body, query: query, path: [parameter, locale].compactMap { $0?.removingPercentEncoding })
                return Answer(status: status, json: json.map { Array($0) })
            }
            guard route.isRetentionMessaging else { return answerNormally(route, body: body, query: query, parameter: parameter) }
            let (status, json) = retention.answer(
                route, method: request.method.rawValue, body: body, query: query, contentType: request.headers[.contentType],
                path: [parameter, locale].compactMap { $0?.removingPercentEncoding })
            return Answer(status: status, json: json.map { Array($0) })
        }
        var answer: Answer
        if refusal != nil {
            answer = Answer(status: 401)
        } else {
            switch fault {
            case .tooManyRequests(let after):
                let instant = Self.nowMilliseconds() + after.clampedMilliseconds
                answer = .error(429, 4_290_000, retryAfter: String(instant))
            case .tooManyRequestsHeader(let header):
                answer = .error(429, 4_290_000, retryAfter: header)
            case .error(let status, let code):
                answer = code.map { .error(status, $0) } ?? Answer(status: status)
            case .raw(let status, let body):
                answer = Answer(status: status, json: body)
            case .unauthorized:
                answer = Answer(status: 401)
            case .delay(let extra):
                try await Task.sleep(for: extra)
                answer = normally()
            case nil:
                answer = normally()
            }
        }
        let record = RecordedRequest(
            route: route, method: request.method.rawValue, pathParameter: parameter, query: query, body: body,
            arrivalMilliseconds: arrivalMilliseconds, arrival: arrival, authRefusal: refusal, status: answer.status,
            retryAfter: answer.retryAfter)
        state.withLock { $0.log.append(record) }
        var headers = HTTPFields()
        if let retryAfter = answer.retryAfter { headers[HTTPField.Name("Retry-After")!] = retryAfter }
        if answer.json != nil { headers[.contentType] = "application/json" }
        return Response(
            status: .init(code: answer.status), headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: answer.json ?? [])))
    }

    private struct Answer {
        var status: Int
        var json: [UInt8]?
        var retryAfter: String?

        static func ok(_ object: [String: Any]) -> Answer {
            Answer(status: 200, json: Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
        }

        static func error(_ status: Int, _ code: Int, retryAfter: String? = nil) -> Answer {
            let object: [String: Any] = ["errorCode": code, "errorMessage": "fake error \(code)"]
            var answer = ok(object)
            answer.status = status
            answer.retryAfter = retryAfter
            return answer
        }
    }

    private func answerNormally(_ route: Route, body: [UInt8], query: [String: [String]], parameter: String?) -> Answer {
        state.withLock { state in
            switch route {
            case .notificationHistory:
                return notificationHistory(&state, body: body, token: query["paginationToken"]?.first)
            case .subscriptionStatuses:
                let statuses = Set((query["status"] ?? []).compactMap { Int($0) })
                return subscriptionStatuses(state, transactionId: parameter ?? "", statuses: statuses)
            case .transactionInfo:
                guard let found = state.transactions.first(where: { $0.transactionId == parameter }) else {
                    return .error(404, 4_040_010)
                }
                return .ok(["signedTransactionInfo": found.signedTransactionInfo])
            case .transactionHistory:
                return transactionHistory(state, transactionId: parameter ?? "", revision: query["revision"]?.first)
            case .requestTestNotification:
                let token = UUID().uuidString.lowercased()
                state.testNotifications[token] = state.testNotificationPayload
                return .ok(["testNotificationToken": token])
            case .realtimeURL, .retentionMessage, .messageList, .retentionImage, .imageList, .defaultMessage, .performanceTest,
                .performanceTestResult, .orderLookup, .refundHistory, .renewalExtension, .massExtension, .massExtensionStatus,
                .appAccountToken, .appTransactionInfo:
                return Answer(status: 500)  // answered by `retention` or `support` (see `handle`)
            case .consumption, .consumptionV1:
                return consumption(&state, transactionId: parameter ?? "", body: body, v1: route == .consumptionV1)
            case .testNotificationStatus:
                guard let payload = state.testNotifications[parameter ?? ""] else { return .error(404, 4_040_008) }
                var object: [String: Any] = [
                    "sendAttempts": state.testNotificationResults.map { ["attemptDate": Self.nowMilliseconds(), "sendAttemptResult": $0] }
                ]
                if let payload { object["signedPayload"] = payload }
                return .ok(object)
            }
        }
    }

    private func consumption(_ state: inout State, transactionId: String, body: [UInt8], v1: Bool) -> Answer {
        guard let known = state.consumptionTransactions[transactionId] else { return .error(404, 4_040_010) }
        let refusal = v1
            ? FakeConsumptionRules.refusalV1(body: body)
            : FakeConsumptionRules.refusal(body: body, productType: known.productType, advancedCommerce: known.advancedCommerce)
        guard let refusal else {
            state.acceptedConsumption[transactionId, default: 0] += 1
            if let deadline = known.deadline, Self.nowMilliseconds() >= deadline { state.lateConsumption.append(transactionId) }
            if !known.consented { state.consentlessConsumption.append(transactionId) }
            return Answer(status: 202)
        }
        state.rejectedConsumption.append(RejectedConsumption(transactionId: transactionId, body: body, refusal: refusal))
        guard let code = refusal.errorCode else { return Answer(status: 400) }
        var answer = Answer.error(400, code)
        answer.json = Array((try? JSONSerialization.data(withJSONObject: ["errorCode": code, "errorMessage": refusal.name], options: [.sortedKeys])) ?? Data())
        return answer
    }

    private func notificationHistory(_ state: inout State, body: [UInt8], token: String?) -> Answer {
        guard let filter = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let start = (filter["startDate"] as? NSNumber)?.int64Value, let end = (filter["endDate"] as? NSNumber)?.int64Value
        else { return .error(400, 4_000_000) }
        if start < Self.nowMilliseconds() - lookbackMilliseconds { return .error(400, 4_000_012) }
        if start >= end { return .error(400, 4_000_013) }
        let type = filter["notificationType"] as? String
        let subtype = filter["notificationSubtype"] as? String
        let transactionId = filter["transactionId"] as? String
        if type != nil && transactionId != nil { return .error(400, 4_000_019) }
        let onlyFailures = filter["onlyFailures"] as? Bool ?? false
        // The window a token belongs to: the same body must come with it (Apple's rule).
        let window = String(decoding: (try? JSONSerialization.data(withJSONObject: filter, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
        var offset = 0
        if let token {
            guard let issued = state.tokens[token], issued.window == window else { return .error(400, 4_000_014) }
            guard issued.offset >= 0 else { return .error(400, 4_000_017) }
            offset = issued.offset
        }
        let matching = state.notifications.filter { notification in
            notification.sentDate >= start && notification.sentDate < end && (!onlyFailures || notification.failed)
                && (type == nil || notification.notificationType == type) && (subtype == nil || notification.subtype == subtype)
                && (transactionId == nil || notification.transactionIds.contains(transactionId!))
        }
        let page = matching.dropFirst(offset).prefix(state.pageSize)
        let hasMore = offset + page.count < matching.count
        var object: [String: Any] = [
            "hasMore": hasMore,
            "notificationHistory": page.map { notification -> [String: Any] in
                [
                    "signedPayload": notification.signedPayload,
                    "sendAttempts": [[
                        "attemptDate": notification.sentDate,
                        "sendAttemptResult": notification.failed ? "NO_RESPONSE" : "SUCCESS",
                    ]],
                ]
            },
        ]
        if hasMore {
            let next = UUID().uuidString
            state.tokens[next] = (window, offset + page.count)
            object["paginationToken"] = next
        }
        return .ok(object)
    }

    private func subscriptionStatuses(_ state: State, transactionId: String, statuses: Set<Int>) -> Answer {
        guard let known = state.transactions.first(where: { $0.transactionId == transactionId || $0.originalTransactionId == transactionId })
        else { return .error(404, 4_040_010) }
        let groups = state.customers.first { $0.values.contains { $0.contains(known.originalTransactionId) } }
            ?? ["fake-group": [known.originalTransactionId]]
        var data: [[String: Any]] = []
        for (group, purchases) in groups.shuffled() {
            var last: [[String: Any]] = []
            for purchase in purchases.shuffled() {
                guard let latest = state.transactions.last(where: { $0.originalTransactionId == purchase }),
                    statuses.isEmpty || statuses.contains(latest.status)
                else { continue }
                var entry: [String: Any] = [
                    "status": latest.status, "originalTransactionId": latest.originalTransactionId,
                    "signedTransactionInfo": latest.signedTransactionInfo,
                ]
                if let renewal = latest.signedRenewalInfo { entry["signedRenewalInfo"] = renewal }
                last.append(entry)
            }
            data.append(["subscriptionGroupIdentifier": group, "lastTransactions": last])
        }
        return .ok(["environment": environment.rawValue, "bundleId": jwtCheck.bundleId, "data": data])
    }

    private func transactionHistory(_ state: State, transactionId: String, revision: String?) -> Answer {
        guard let known = state.transactions.first(where: { $0.transactionId == transactionId || $0.originalTransactionId == transactionId })
        else { return .error(400, 4_000_006) }
        let all = state.history[known.originalTransactionId] ?? []
        let offset = revision.flatMap { Int($0.dropFirst("rev-".count)) } ?? 0
        let page = Array(all.dropFirst(offset).prefix(state.historyPageSize))
        return .ok([
            "revision": "rev-\(offset + page.count)", "hasMore": offset + page.count < all.count,
            "bundleId": jwtCheck.bundleId, "environment": environment.rawValue, "signedTransactions": page,
        ])
    }

    static func nowMilliseconds() -> Int64 { WallClock.milliseconds() }
}

/// Why the fake could not start.
public struct FakeAppStoreAPIError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Duration {
    /// Whole milliseconds (test scripting only).
    var clampedMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

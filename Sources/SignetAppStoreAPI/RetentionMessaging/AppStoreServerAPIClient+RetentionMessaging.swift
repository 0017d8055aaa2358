public import AppStoreModels
import NIOHTTP1

// The Retention Messaging API's configuration endpoints (docs/retention.md §4): the realtime
// URL, messages, images, default messages and the performance test. Each request is checked
// against Apple's documented rules before it is sent (``RetentionMessagingError``), spends the
// `retentionMessaging` budget (Configure Default Message: its own, 10/s), and is retried like
// every call. Identifiers go out lower-case.
extension AppStoreServerAPIClient {
    // MARK: Realtime URL

    /// Configure Realtime URL (`PUT /inApps/v1/messaging/realtime/url`): where Apple POSTs
    /// Get Retention Message requests in the configured environment. Production answers
    /// 403 (4030026) until a performance test passed in Sandbox.
    public func configureRealtimeURL(_ url: String) async throws {
        guard url.hasPrefix("https://"), url.count > "https://".count, url.utf8.count <= 256 else {
            throw RetentionMessagingError(
                .invalidRealtimeURL, field: "realtimeURL",
                url.hasPrefix("https://") ? "has \(url.utf8.count) characters; at most 256" : "'\(url)' does not begin with https://")
        }
        try await sendExpectingNoBody(
            AppStoreAPICall(
                method: .PUT, path: "/inApps/v1/messaging/realtime/url",
                body: try AppStoreJSON.encode(RealtimeURLConfiguration(realtimeURL: url)), endpointClass: .retentionMessaging))
    }

    /// Get Realtime URL; nil when none is configured (404, 4040021).
    public func realtimeURL() async throws -> String? {
        do {
            return try await decodeRetention(
                RealtimeURLConfiguration.self, AppStoreAPICall(method: .GET, path: "/inApps/v1/messaging/realtime/url", endpointClass: .retentionMessaging)
            ).realtimeURL
        } catch let error as AppStoreAPIError where error.errorCode == AppStoreAPIErrorCode.realtimeURLNotFound {
            return nil
        }
    }

    /// Delete Realtime URL: the environment gets no more real-time requests.
    public func deleteRealtimeURL() async throws {
        try await sendExpectingNoBody(AppStoreAPICall(method: .DELETE, path: "/inApps/v1/messaging/realtime/url", endpointClass: .retentionMessaging))
    }

    // MARK: Messages

    /// Upload Message (`PUT /inApps/v1/messaging/message/{id}`). Not idempotent: an identifier
    /// used before answers 409 (4090001).
    public func uploadMessage(identifier: String, _ message: RetentionMessage) async throws {
        let id = try RetentionIdentifier.canonical(identifier, field: "messageIdentifier")
        let body = try AppStoreJSON.encode(try message.validated())
        try await sendExpectingNoBody(
            AppStoreAPICall(method: .PUT, path: "/inApps/v1/messaging/message/" + id, body: body, endpointClass: .retentionMessaging))
    }

    /// Get Message List: every message's identifier and review state.
    public func messageList() async throws -> RetentionMessageList {
        try await decodeRetention(
            RetentionMessageList.self, AppStoreAPICall(method: .GET, path: "/inApps/v1/messaging/message/list", endpointClass: .retentionMessaging))
    }

    /// Delete Message. Not idempotent: an unknown identifier answers 404 (4040015).
    public func deleteMessage(identifier: String) async throws {
        let id = try RetentionIdentifier.canonical(identifier, field: "messageIdentifier")
        try await sendExpectingNoBody(
            AppStoreAPICall(method: .DELETE, path: "/inApps/v1/messaging/message/" + id, endpointClass: .retentionMessaging))
    }

    // MARK: Images

    /// Upload Image (`PUT /inApps/v1/messaging/image/{id}?imageSize=…`, the PNG as the body).
    public func uploadImage(identifier: String, _ image: RetentionImage) async throws {
        let id = try RetentionIdentifier.canonical(identifier, field: "imageIdentifier")
        var call = AppStoreAPICall(
            method: .PUT, path: "/inApps/v1/messaging/image/" + id, query: [("imageSize", image.size.rawValue)], body: image.png,
            endpointClass: .retentionMessaging)
        call.contentType = "image/png"
        try await sendExpectingNoBody(call)
    }

    /// Get Image List: every image's identifier, review state and size.
    public func imageList() async throws -> RetentionImageList {
        try await decodeRetention(
            RetentionImageList.self, AppStoreAPICall(method: .GET, path: "/inApps/v1/messaging/image/list", endpointClass: .retentionMessaging))
    }

    /// Delete Image. An image a message uses answers 403 (4030019) until the message is deleted.
    public func deleteImage(identifier: String) async throws {
        let id = try RetentionIdentifier.canonical(identifier, field: "imageIdentifier")
        try await sendExpectingNoBody(
            AppStoreAPICall(method: .DELETE, path: "/inApps/v1/messaging/image/" + id, endpointClass: .retentionMessaging))
    }

    // MARK: Default messages

    /// Configure Default Message (`PUT /inApps/v1/messaging/default/{productId}/{locale}`):
    /// idempotent, replaces the product's default in that locale. The message (and its image)
    /// must be approved: 403 otherwise.
    public func configureDefaultMessage(productId: String, locale: String, messageIdentifier: String) async throws {
        let path = try Self.defaultMessagePath(productId: productId, locale: locale)
        let body = try AppStoreJSON.encode(DefaultMessageConfiguration(
            messageIdentifier: try RetentionIdentifier.canonical(messageIdentifier, field: "messageIdentifier")))
        try await sendExpectingNoBody(AppStoreAPICall(method: .PUT, path: path, body: body, endpointClass: .retentionDefaultMessage))
    }

    /// Get Default Message; nil when none is configured (404, 4040020).
    public func defaultMessage(productId: String, locale: String) async throws -> String? {
        let path = try Self.defaultMessagePath(productId: productId, locale: locale)
        do {
            return try await decodeRetention(
                DefaultMessageConfiguration.self, AppStoreAPICall(method: .GET, path: path, endpointClass: .retentionMessaging)
            ).messageIdentifier
        } catch let error as AppStoreAPIError where error.errorCode == AppStoreAPIErrorCode.defaultMessageNotFound {
            return nil
        }
    }

    /// Delete Default Message: idempotent (200 when none is configured).
    public func deleteDefaultMessage(productId: String, locale: String) async throws {
        let path = try Self.defaultMessagePath(productId: productId, locale: locale)
        try await sendExpectingNoBody(AppStoreAPICall(method: .DELETE, path: path, endpointClass: .retentionMessaging))
    }

    /// `/inApps/v1/messaging/default/{productId}/{locale}`; the locale is case-sensitive and kept as given.
    static func defaultMessagePath(productId: String, locale: String) throws(RetentionMessagingError) -> String {
        guard !productId.isEmpty else { throw RetentionMessagingError(.invalidProductId, field: "productId", "is empty") }
        let shape = locale.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...3).contains(shape.count), shape.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }) else {
            throw RetentionMessagingError(.invalidLocale, field: "locale", "'\(locale)' is not an App Store locale such as en-US")
        }
        return "/inApps/v1/messaging/default/" + PercentEncoding.encoded(productId) + "/" + PercentEncoding.encoded(locale)
    }

    // MARK: Performance test (Sandbox only)

    /// Initiate Performance Test (`POST /inApps/v1/messaging/performanceTest`, on the Sandbox
    /// host whatever the configured environment: Apple serves it only there). The purchase must
    /// be an active auto-renewable subscription bought in Sandbox; the Sandbox realtime URL must
    /// be configured.
    public func initiatePerformanceTest(originalTransactionId: String) async throws -> PerformanceTestStart {
        guard !originalTransactionId.isEmpty else {
            throw RetentionMessagingError(.invalidPerformanceTestRequest, field: "originalTransactionId", "is empty")
        }
        struct Request: Encodable { var originalTransactionId: String }
        return try await transport.send(
            AppStoreAPICall(
                method: .POST, path: "/inApps/v1/messaging/performanceTest",
                body: try AppStoreJSON.encode(Request(originalTransactionId: originalTransactionId)), endpointClass: .retentionMessaging),
            in: .sandbox, as: PerformanceTestStart.self)
    }

    /// Get Performance Test Results (Sandbox host): `PENDING` while it runs, then `PASS` or `FAIL`.
    /// `requestId` is the UUID Initiate Performance Test answered (sent lower-case).
    public func performanceTestResult(requestId: String) async throws -> PerformanceTestResult {
        let id = try RetentionIdentifier.canonical(requestId, field: "requestId")
        return try await transport.send(
            AppStoreAPICall(
                method: .GET, path: "/inApps/v1/messaging/performanceTest/result/" + id,
                endpointClass: .retentionMessaging),
            in: .sandbox, as: PerformanceTestResult.self)
    }

    // MARK: Plumbing

    private func decodeRetention<T: Decodable>(_ type: T.Type, _ call: AppStoreAPICall) async throws -> T {
        try await transport.send(call, in: configuration.environment, as: type)
    }

    /// A call Apple answers 200 with no body.
    private func sendExpectingNoBody(_ call: AppStoreAPICall) async throws {
        try await transport.send(call, in: configuration.environment) { _, _ in () }
    }
}

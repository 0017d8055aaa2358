/// A failed App Store Server API call, after the client's own retries.
///
/// Carries the HTTP status and Apple's `{errorCode, errorMessage}` when Apple sent them (a
/// 401 has no body). ``description`` is one line an operator can act on.
public struct AppStoreAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as far as what to do next is concerned.
    public enum Kind: String, Sendable, Hashable {
        /// 401: the JWT was refused. Nothing changes by retrying.
        case unauthorized
        /// 429 (4290000) still, when the retry budget ran out.
        case rateLimited
        /// Apple's "retry later" errors (4040002, 4040004, 4040006, 5000001, other 5xx), when
        /// the retry budget ran out.
        case unavailable
        /// No HTTP answer (connect, TLS, timeout), when the retry budget ran out.
        case transport
        /// Any other error Apple answered: the same request fails the same way again.
        case permanent
        /// A 2xx answer whose body is not the documented JSON.
        case invalidResponse
    }

    public var kind: Kind
    /// `METHOD /path` of the call (never the query: it may hold pagination tokens).
    public var endpoint: String
    /// The HTTP status, nil when no answer came.
    public var status: Int?
    /// Apple's `errorCode`, when the body had one.
    public var errorCode: Int?
    /// Apple's `errorMessage`, or what failed underneath (transport, decoding).
    public var errorMessage: String?

    public init(_ kind: Kind, endpoint: String, status: Int? = nil, errorCode: Int? = nil, errorMessage: String? = nil) {
        self.kind = kind
        self.endpoint = endpoint
        self.status = status
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }

    /// 4000014 or 4000017: the pagination token is invalid or expired; send the same body
    /// again without it (the window restarts).
    public var isPaginationTokenRejected: Bool {
        errorCode == AppStoreAPIErrorCode.invalidPaginationToken || errorCode == AppStoreAPIErrorCode.paginationTokenExpired
    }

    /// 4000012: Get Notification History's start date lies beyond Apple's lookback.
    public var isStartDateTooFarInPast: Bool { errorCode == AppStoreAPIErrorCode.startDateTooFarInPast }

    /// 4040010: no such transaction id in the store asked.
    public var isTransactionIdNotFound: Bool { errorCode == AppStoreAPIErrorCode.transactionIdNotFound }

    /// 4040008: no test notification with that token (yet).
    public var isTestNotificationNotFound: Bool { errorCode == AppStoreAPIErrorCode.testNotificationNotFound }

    /// `METHOD /path answered N (errorCode C)` or the transport failure: for retry logs.
    var summary: String {
        var text = endpoint + (status.map { " answered \($0)" } ?? ": \(errorMessage ?? "no answer")")
        if let errorCode { text += " (errorCode \(errorCode))" }
        return text
    }

    public var description: String {
        let apple = [errorCode.map { "errorCode \($0)" }, errorMessage].compactMap { $0 }.joined(separator: ": ")
        let prefix = "App Store Server API \(endpoint)" + (status.map { " answered \($0)" } ?? "")
        switch kind {
        case .unauthorized:
            return prefix + ": the JWT was refused. Check SIGNET_APPSTORE_KEY_ID (the key's id), SIGNET_APPSTORE_ISSUER_ID "
                + "(the issuer id above the key list), that the .p8 is that key's, SIGNET_BUNDLE_ID (the app the key's team "
                + "owns), this machine's clock (JWT iat/exp), and that the app has a Production release (an app never released "
                + "answers 401 on the Production host; use Sandbox)"
        case .rateLimited:
            return prefix + ": rate limit still exceeded after the retries" + (apple.isEmpty ? "" : " (\(apple))")
        case .unavailable:
            return prefix + ": Apple is temporarily unavailable, retries exhausted" + (apple.isEmpty ? "" : " (\(apple))")
        case .transport:
            return prefix + ": no answer, retries exhausted: " + (errorMessage ?? "unknown transport error")
        case .permanent:
            return prefix + (apple.isEmpty ? ": refused" : ": \(apple)")
        case .invalidResponse:
            return prefix + ": the answer is not the documented JSON: " + (errorMessage ?? "")
        }
    }
}

/// Apple's documented `errorCode` values the client acts on.
public enum AppStoreAPIErrorCode {
    /// Start date too far in the past (Get Notification History).
    public static let startDateTooFarInPast = 4_000_012
    /// Start date after (or equal to) end date.
    public static let startDateAfterEndDate = 4_000_013
    /// Invalid pagination token.
    public static let invalidPaginationToken = 4_000_014
    /// Pagination token expired.
    public static let paginationTokenExpired = 4_000_017
    /// Both a transactionId and a notificationType filter.
    public static let invalidNotificationHistoryFilter = 4_000_019
    /// Account not found (retryable).
    public static let accountNotFoundRetryable = 4_040_002
    /// App not found (retryable).
    public static let appNotFoundRetryable = 4_040_004
    /// Original transaction id not found (retryable).
    public static let originalTransactionIdNotFoundRetryable = 4_040_006
    /// Test notification not found (Apple has not recorded it yet).
    public static let testNotificationNotFound = 4_040_008
    /// Transaction id not found (a bare id may be a Sandbox one).
    public static let transactionIdNotFound = 4_040_010
    /// No default message for that product and locale (Get Default Message).
    public static let defaultMessageNotFound = 4_040_020
    /// No realtime URL configured (Get Realtime URL).
    public static let realtimeURLNotFound = 4_040_021
    /// Configure Realtime URL in Production before a performance test passed in Sandbox.
    public static let noPassingPerformanceTest = 4_030_026
    /// An appTransactionId where Set App Account Token needs an original transaction id.
    public static let appTransactionIdNotSupported = 4_000_048
    /// Set App Account Token on a family-shared transaction.
    public static let familyTransactionNotSupported = 4_000_185
    /// Set App Account Token with a transaction id that is not an original one.
    public static let transactionIdIsNotOriginalTransactionId = 4_000_187
    /// The subscription's state does not allow a renewal-date extension (not active, a free
    /// offer period, billing retry, an expired grace period, two extensions in 365 days).
    public static let subscriptionExtensionIneligible = 4_030_004
    /// The subscription reached the maximum number of extensions.
    public static let subscriptionMaxExtension = 4_030_005
    /// A family member's subscription: extend the purchaser's instead.
    public static let familySharedSubscriptionExtensionIneligible = 4_030_007
    /// Original transaction id not found.
    public static let originalTransactionIdNotFound = 4_040_005
    /// No mass extension with that product and request identifier.
    public static let statusRequestNotFound = 4_040_009
    /// The customer has no app transaction.
    public static let appTransactionDoesNotExist = 4_040_019
    /// Rate limit exceeded.
    public static let rateLimitExceeded = 4_290_000
    /// General internal error (retryable).
    public static let generalInternalRetryable = 5_000_001

    /// Apple's "errors to retry" with a 4xx status.
    public static let retryable: Set<Int> = [
        accountNotFoundRetryable, appNotFoundRetryable, originalTransactionIdNotFoundRetryable, generalInternalRetryable,
    ]
}

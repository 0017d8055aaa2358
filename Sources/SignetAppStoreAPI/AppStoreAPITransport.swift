import AppStoreModels
import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import SignetCore

/// One App Store Server API call: what to send and which budget it spends.
struct AppStoreAPICall: Sendable {
    var method: HTTPMethod
    /// The path, already percent-encoded (`/inApps/v1/...`).
    var path: String
    var query: [(name: String, value: String)] = []
    var body: [UInt8]?
    /// The body's media type (Upload Image sends `image/png`).
    var contentType = "application/json"
    var endpointClass: AppStoreAPIEndpointClass = .standard

    /// `METHOD /path` for errors and logs; the query is left out, it may hold tokens.
    var endpoint: String { "\(method.rawValue) \(path)" }
}

/// Sends calls with auth, the rate limiter and the retry policy; knows nothing of endpoints.
///
/// Per attempt: wait for the bucket's slot, sign (or reuse) the JWT, send, classify:
/// - 2xx whose body decodes as the documented answer: the answer;
/// - 2xx that does not (a proxy's `{}`, a truncated body): `invalidResponse`, retried with
///   backoff like a 5xx; an answer larger than ``maximumResponseBytes``: `invalidResponse`
///   at once (it would be as large again);
/// - 429: pause the whole bucket until `Retry-After` (absolute UNIX ms; honoured up to
///   ``AppStoreAPIConfiguration/maxRetryAfter``; backoff with jitter when missing,
///   unparsable or past), then retry;
/// - 5xx, Apple's retryable 4xx codes, transport errors: capped exponential backoff with
///   jitter, then retry;
/// - 401 and every other answer: thrown at once.
/// 429s and retryable errors share one budget of `maxRetries` attempts after the first.
struct AppStoreAPITransport: Sendable {
    /// Largest answer read (a page of 20 notifications is ~0.5 MB).
    static let maximumResponseBytes = 16 << 20

    let configuration: AppStoreAPIConfiguration
    let httpClient: HTTPClient
    let limiter: AppStoreAPIRateLimiter
    let signer: AppStoreAPITokenSigner
    let logger: Logger

    /// What one attempt came to.
    private enum Outcome {
        /// A 2xx: its status and body.
        case success(Int, [UInt8])
        /// Worth another try; the pause applies to the whole bucket when `pauseBucket`.
        case retry(AppStoreAPIError, wait: Duration?, pauseBucket: Bool)
        case fail(AppStoreAPIError)
    }

    /// The decoded 2xx answer of `call`, asked of `environment`'s store (the configured one,
    /// or Sandbox for a Production client's fallback) and paid from that store's bucket.
    /// Throws ``AppStoreAPIError`` or `CancellationError`.
    func send<Answer: Decodable>(_ call: AppStoreAPICall, in environment: AppStoreEnvironment, as _: Answer.Type) async throws -> Answer {
        try await send(call, in: environment) { _, body in try AppStoreJSON.decode(Answer.self, from: body) }
    }

    /// The 2xx answer of `call` as `read` makes it of the status and body (Send Consumption
    /// Information answers 202 with no body), asked and paid for as above. A `read` that throws
    /// is retried like a 5xx, then thrown as `invalidResponse`.
    func send<Answer>(
        _ call: AppStoreAPICall, in environment: AppStoreEnvironment, reading read: (Int, [UInt8]) throws -> Answer
    ) async throws -> Answer {
        let bucket = AppStoreAPIRateLimiter.Bucket(
            bundleId: configuration.credentials.bundleId, environment: environment, endpointClass: call.endpointClass)
        let rate = configuration.rate(for: call.endpointClass, in: environment)
        let baseURL = configuration.url(for: environment)
        var backoff = configuration.initialBackoff
        var attempt = 0
        while true {
            try await limiter.acquire(bucket, requestsPerSecond: rate)
            let (cause, wait, pauseBucket): (AppStoreAPIError, Duration?, Bool)
            switch await exchange(call, baseURL: baseURL) {
            case .success(let status, let body):
                do {
                    return try read(status, body)
                } catch {
                    // A proxy's `{}`, a truncated body: worth another try, like a 5xx.
                    (cause, wait, pauseBucket) = (
                        AppStoreAPIError(.invalidResponse, endpoint: call.endpoint, status: status, errorMessage: "\(error)"), nil, false)
                }
            case .fail(let failure):
                throw failure
            case .retry(let failure, let asked, let pause):
                (cause, wait, pauseBucket) = (failure, asked, pause)
            }
            // A cancelled call stops here with CancellationError, not with the transport error it caused.
            try Task.checkCancellation()
            guard attempt < configuration.maxRetries else { throw cause }
            let delay = wait ?? Self.jittered(backoff)
            backoff = min(backoff * 2, configuration.maxBackoff)
            attempt += 1
            if pauseBucket {
                // Every caller of this bucket waits, not only this one (Apple counts per app);
                // the caller that set the pause says so, once.
                if await limiter.pause(bucket, for: delay) { reportPause(bucket, delay: delay, cause: cause) }
            } else {
                logger.warning(
                    "App Store Server API: \(cause.summary); retrying in \(Int(delay / .milliseconds(1))) ms (retry \(attempt) of \(configuration.maxRetries))")
                try await Task.sleep(for: delay)
            }
        }
    }

    private func exchange(_ call: AppStoreAPICall, baseURL: String) async -> Outcome {
        let token: String
        do {
            token = try signer.token()
        } catch {
            return .fail(AppStoreAPIError(.permanent, endpoint: call.endpoint, errorMessage: "cannot sign the JWT: \(error)"))
        }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "User-Agent", value: "signet")
        headers.add(name: "Accept", value: "application/json")
        if call.body != nil { headers.add(name: "Content-Type", value: call.contentType) }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: baseURL + call.path + Self.queryString(call.query), method: call.method, headers: headers,
                body: call.body.map { .bytes($0) })
        } catch {
            return .fail(AppStoreAPIError(.permanent, endpoint: call.endpoint, errorMessage: "invalid request URL from '\(baseURL)': \(error)"))
        }
        let collector = AppStoreAPIResponseCollector(maximumBytes: Self.maximumResponseBytes)
        let response: AppStoreAPIResponseCollector.Response
        do {
            let task = httpClient.execute(
                request: request, delegate: collector,
                deadline: .now() + .nanoseconds(configuration.requestTimeout.clampedNanoseconds), logger: logger)
            response = try await withTaskCancellationHandler {
                try await task.get()
            } onCancel: {
                task.cancel()
            }
        } catch let tooLarge as AppStoreAPIResponseCollector.TooLarge {
            // The same request would bring the same answer again.
            return .fail(AppStoreAPIError(.invalidResponse, endpoint: call.endpoint, errorMessage: "\(tooLarge)"))
        } catch {
            return .retry(AppStoreAPIError(.transport, endpoint: call.endpoint, errorMessage: "\(error)"), wait: nil, pauseBucket: false)
        }
        let status = Int(response.status.code)
        if (200..<300).contains(status) { return .success(status, response.body) }
        return classify(status: status, body: response.body, retryAfter: response.headers.first(name: "Retry-After"), call: call)
    }

    private func classify(status: Int, body: [UInt8], retryAfter: String?, call: AppStoreAPICall) -> Outcome {
        // A 401 has no body; anything else may carry Apple's {errorCode, errorMessage}.
        let apple = status == 401 ? nil : try? AppStoreJSON.decode(AppStoreAPIErrorBody.self, from: body)
        func error(_ kind: AppStoreAPIError.Kind) -> AppStoreAPIError {
            AppStoreAPIError(kind, endpoint: call.endpoint, status: status, errorCode: apple?.errorCode, errorMessage: apple?.errorMessage)
        }
        if status == 401 { return .fail(error(.unauthorized)) }
        if status == 429 || apple?.errorCode == AppStoreAPIErrorCode.rateLimitExceeded {
            return .retry(error(.rateLimited), wait: retryAfterDelay(retryAfter), pauseBucket: true)
        }
        if status >= 500 || apple.flatMap(\.errorCode).map(AppStoreAPIErrorCode.retryable.contains) == true {
            return .retry(error(.unavailable), wait: nil, pauseBucket: false)
        }
        return .fail(error(.permanent))
    }

    /// How long until Apple's `Retry-After` (UNIX time in milliseconds), capped; nil when
    /// the header is missing, unparsable or already past (then: backoff with jitter).
    func retryAfterDelay(_ header: String?, now: Date = Date()) -> Duration? {
        guard let header, let milliseconds = Int64(header.trimmingCharacters(in: .whitespaces)) else { return nil }
        // Any Int64 the server sends must not trap: compared before subtracting, the difference
        // of two positive values cannot overflow.
        let nowMilliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        guard milliseconds > nowMilliseconds else { return nil }
        let remaining = milliseconds - nowMilliseconds
        // +1 ms: `now` was truncated to the millisecond, the wait must not end before the instant.
        return min(.milliseconds(remaining + 1), configuration.maxRetryAfter)
    }

    /// Logs a pause once, with its end, and shows the end on /metrics: a wait of minutes or an
    /// hour must not look like a hang.
    private func reportPause(_ bucket: AppStoreAPIRateLimiter.Bucket, delay: Duration, cause: AppStoreAPIError) {
        let end = Date().addingTimeInterval(Double(delay.clampedNanoseconds) / 1e9)
        Gauge(
            label: "signet_appstore_api_paused_until_seconds",
            dimensions: [("environment", bucket.environment.rawValue), ("endpoint", bucket.endpointClass.label)]
        ).record(end.timeIntervalSince1970)
        AppStoreAPIPauses.record(AppStoreAPIPauses.Pause(
            environment: bucket.environment.rawValue, endpoint: bucket.endpointClass.label,
            until: Int64((end.timeIntervalSince1970 * 1000).rounded(.up))))
        logger.warning(
            "App Store Server API: \(cause.summary): Apple asked for a pause; no \(bucket.endpointClass.label) request of \(bucket.bundleId) in \(bucket.environment.rawValue) goes before \(ISO8601DateFormatter().string(from: end)) (\(Int(delay / .milliseconds(1))) ms), then the calls waiting retry")
    }

    /// Between half and all of `backoff` ("equal jitter"): callers that failed together
    /// spread out, and none retries sooner than half the backoff.
    static func jittered(_ backoff: Duration) -> Duration {
        backoff / 2 + backoff / 2 * Double.random(in: 0...1)
    }

    static func queryString(_ query: [(name: String, value: String)]) -> String {
        guard !query.isEmpty else { return "" }
        return "?" + query.map { "\(PercentEncoding.encoded($0.name))=\(PercentEncoding.encoded($0.value))" }.joined(separator: "&")
    }
}

/// Apple's error body, `{"errorCode": N, "errorMessage": "..."}`.
struct AppStoreAPIErrorBody: Decodable {
    var errorCode: Int?
    var errorMessage: String?
}

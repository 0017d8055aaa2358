public import AppStoreModels
import Foundation
import Logging
import SignetCore

/// One page of a notification-history window, with what a resumable consumer must commit.
public struct NotificationHistoryPage: Sendable {
    /// The notifications of this page, in Apple's order.
    public var items: [NotificationHistoryItem]
    /// The body this page was fetched with: the window asked for, unless its start was
    /// clamped to Apple's lookback (then `startDate` is later than asked).
    public var request: NotificationHistoryRequest
    /// The token this page was fetched with (nil: the window's first page).
    public var paginationToken: String?
    /// The token of the next page; nil on the last page. After processing ``items``, commit
    /// ``request`` with this token; resume with
    /// ``AppStoreServerAPIClient/notificationHistory(_:resumingAfter:)``.
    public var nextPaginationToken: String?
    /// Whether Apple has more pages.
    public var hasMore: Bool
    /// Why the window started over before this page (Apple refused the token: 4000014 or
    /// 4000017), nil otherwise. Items of pages already seen come again; a consumer that
    /// dedupes (Signet's pipeline does) needs to do nothing else.
    public var restartedWindow: AppStoreAPIError?

    /// A page; the pipeline's history source makes an empty last one for a part Apple no longer keeps.
    package init(
        items: [NotificationHistoryItem], request: NotificationHistoryRequest, paginationToken: String?,
        nextPaginationToken: String?, hasMore: Bool, restartedWindow: AppStoreAPIError?
    ) {
        self.items = items
        self.request = request
        self.paginationToken = paginationToken
        self.nextPaginationToken = nextPaginationToken
        self.hasMore = hasMore
        self.restartedWindow = restartedWindow
    }
}

/// The pages of one Get Notification History window, fetched one after the other (Apple's
/// pagination is sequential; split a long window into several to fetch concurrently).
public struct NotificationHistoryPages: AsyncSequence, Sendable {
    public typealias Element = NotificationHistoryPage
    /// Token refusals tolerated per window before the refusal is thrown (a token that keeps
    /// failing would otherwise restart the window forever).
    package static let maximumRestarts = 3

    let client: AppStoreServerAPIClient
    let request: NotificationHistoryRequest
    let paginationToken: String?

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, request: request, token: paginationToken, finished: false)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let client: AppStoreServerAPIClient
        var request: NotificationHistoryRequest
        var token: String?
        var finished: Bool
        var restarts = 0
        /// Times Apple refused this window's start (4000012) and it was clamped.
        var clamps = 0
        /// `request` as sent, encoded again only when the clamp changes it.
        var encodedRequest: (request: NotificationHistoryRequest, body: [UInt8])?

        init(client: AppStoreServerAPIClient, request: NotificationHistoryRequest, token: String?, finished: Bool) {
            self.client = client
            self.request = request
            self.token = token
            self.finished = finished
        }

        /// The next page, nil after the last. Throws ``AppStoreAPIError`` (or `CancellationError`).
        public mutating func next() async throws -> NotificationHistoryPage? {
            guard !finished else { return nil }
            var restartedWindow: AppStoreAPIError?
            while true {
                do {
                    let body: [UInt8]
                    if let encoded = encodedRequest, encoded.request == request {
                        body = encoded.body
                    } else {
                        body = try AppStoreJSON.encode(request)
                        encodedRequest = (request, body)
                    }
                    let response = try await client.notificationHistoryPage(encodedRequest: body, paginationToken: token)
                    let page = NotificationHistoryPage(
                        items: response.notificationHistory, request: request, paginationToken: token,
                        nextPaginationToken: response.hasMore ? response.paginationToken : nil, hasMore: response.hasMore,
                        restartedWindow: restartedWindow)
                    guard response.hasMore else {
                        finished = true
                        return page
                    }
                    guard let next = response.paginationToken, !next.isEmpty else {
                        throw AppStoreAPIError(
                            .invalidResponse, endpoint: "POST /inApps/v1/notifications/history",
                            errorMessage: "hasMore without a paginationToken")
                    }
                    token = next
                    return page
                } catch let error as AppStoreAPIError where error.isPaginationTokenRejected && token != nil {
                    restarts += 1
                    guard restarts <= NotificationHistoryPages.maximumRestarts else { throw error }
                    client.logger.warning(
                        "App Store Server API: notification history \(error.errorMessage ?? "pagination token refused") (\(error.errorCode ?? 0)); restarting the window from its first page")
                    token = nil
                    restartedWindow = error
                } catch let error as AppStoreAPIError where error.isStartDateTooFarInPast {
                    // Apple checks the start on every page: a window paging near the edge of its
                    // lookback can be refused on any of them. Clamp again (a few times at most),
                    // and only ever forward; what cannot be clamped is thrown, and a consumer may
                    // take it as "nothing left" only when the window ends before the edge
                    // (``NotificationHistoryLookback/verdict(start:end:now:refusals:)`` says `.gone`).
                    clamps += 1
                    let lookback = NotificationHistoryLookback(environment: client.configuration.environment)
                    guard clamps <= NotificationHistoryLookback.maximumClamps,
                        case .clamped(let start) = lookback.verdict(
                            start: request.startDate, end: request.endDate, now: WallClock.milliseconds(), refusals: clamps),
                        start > request.startDate
                    else { throw error }
                    client.logger.warning(
                        "App Store Server API: Apple refused notification history from \(Self.iso(request.startDate)) as older than it keeps (\(lookback.days) days in \(client.configuration.environment.rawValue)); asking from \(Self.iso(start)) (clamp \(clamps) of at most \(NotificationHistoryLookback.maximumClamps)); the window starts over from its first page")
                    request.startDate = start
                    token = nil
                }
            }
        }

        static func iso(_ milliseconds: Int64) -> String {
            ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
    }
}

import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetFixtures
import SignetTestSupport
import Testing

@Suite("Retries, Retry-After and the client-side rate limit, observed by the fake server")
struct RetryAndRateLimitTests {
    static func addTransaction(_ fake: FakeAppStoreAPI) throws -> String {
        let sample = APITestBed.samples[0]
        let signed = try #require(sample.signedTransaction)
        let id = try #require(sample.sample.transactionId)
        fake.addTransactions([.init(transactionId: id, originalTransactionId: sample.sample.originalTransactionId ?? id, signedTransactionInfo: signed)])
        return id
    }

    @Test("5000001, a bare 503 and 4040002 are retried and the call succeeds")
    func retryable() async throws {
        try await withFakeAPI { fake, client in
            let id = try Self.addTransaction(fake)
            fake.script([.error(status: 500, errorCode: 5_000_001), .error(status: 503, errorCode: nil), .error(status: 404, errorCode: 4_040_002)], on: .transactionInfo)
            let info = try await client.transactionInfo(transactionId: id)
            #expect(info.signedTransactionInfo == APITestBed.samples[0].signedTransaction)
            #expect(fake.requests(.transactionInfo).map(\.status) == [500, 503, 404, 200])
        }
    }

    @Test("the retry budget ends: the last retryable error is thrown after 1 + maxRetries attempts")
    func budget() async throws {
        try await withFakeAPI(client: { try $0.client($1, maxRetries: 2) }) { fake, client in
            fake.script(Array(repeating: .error(status: 500, errorCode: 5_000_001), count: 5), on: .transactionInfo)
            let error = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo(transactionId: "1") }
            #expect(error?.kind == .unavailable)
            #expect(error?.errorCode == 5_000_001)
            #expect(fake.requests(.transactionInfo).count == 3)
        }
    }

    @Test("a permanent error is thrown at once, not retried")
    func permanent() async throws {
        try await withFakeAPI { fake, client in
            fake.script([.error(status: 400, errorCode: 4_000_006)], on: .transactionInfo)
            let error = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo(transactionId: "x") }
            #expect(error?.kind == .permanent)
            #expect(error?.errorCode == 4_000_006)
            #expect(fake.requests(.transactionInfo).count == 1)
        }
    }

    @Test("401: not retried, one message naming the likely causes; a token of the wrong key gets it from the fake's own check")
    func unauthorized() async throws {
        let bed = try APITestBed()
        let stranger = try APITestBed()  // same kid, another private key
        try await withFakeAPI(bed: bed, client: { try $0.client($1, credentials: stranger.credentials) }) { fake, client in
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await client.subscriptionStatuses(transactionId: "1") }
            #expect(error?.kind == .unauthorized)
            #expect(error?.status == 401)
            #expect(error?.errorCode == nil)
            for cause in ["SIGNET_APPSTORE_KEY_ID", "SIGNET_APPSTORE_ISSUER_ID", "SIGNET_BUNDLE_ID", "clock", "Production release"] {
                #expect(error?.description.contains(cause) == true, "\(cause)")
            }
            #expect(fake.requests.map(\.authRefusal) == ["bad signature"])
        }
    }

    @Test("429: no request of that bucket before Retry-After, the test-notification bucket keeps going")
    func retryAfterPausesTheBucket() async throws {
        try await withFakeAPI { fake, client in
            fake.addNotifications(APITestBed.history(5))
            // 20 s: room for the other bucket's two calls even under the full parallel suite on two
            // cores (5 s was not enough there).
            fake.script([.tooManyRequests(retryAfter: .seconds(20))], on: .notificationHistory)
            let first = Task { try await client.notificationHistoryPage(APITestBed.lastTwoDays()) }
            // Wait for the 429, then send more of the same bucket and of the other one.
            while fake.requests(.notificationHistory).isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            // The fake records a request before its 429 reaches the client: give the client a moment
            // to read it and pause the bucket (a request sent before that cannot be held back).
            try await Task.sleep(for: .milliseconds(500))
            let second = Task { try await client.notificationHistoryPage(APITestBed.lastTwoDays()) }
            let token = try await client.requestTestNotification()
            _ = try await client.testNotificationStatus(token: token.testNotificationToken)
            #expect(try await first.value.notificationHistory.count == 5)
            #expect(try await second.value.notificationHistory.count == 5)

            let history = fake.requests(.notificationHistory)
            let retryAfter = try #require(history.first?.retryAfter.flatMap { Int64($0) })
            #expect(history.map(\.status) == [429, 200, 200])
            #expect(history.dropFirst().allSatisfy { $0.arrivalMilliseconds >= retryAfter })
            let other = fake.requests.filter { $0.route == .requestTestNotification || $0.route == .testNotificationStatus }
            #expect(other.count == 2)
            #expect(other.allSatisfy { $0.arrivalMilliseconds < retryAfter && $0.status == 200 })
        }
    }

    @Test("429 without Retry-After, or with one in the past or unparsable: backoff with jitter, then success")
    func retryAfterFallback() async throws {
        try await withFakeAPI { fake, client in
            let id = try Self.addTransaction(fake)
            fake.script(
                [.tooManyRequestsHeader(nil), .tooManyRequestsHeader("1000"), .tooManyRequestsHeader("soon"),
                 .tooManyRequestsHeader(String(Int64.min))], on: .transactionInfo)
            let started = ContinuousClock.now
            _ = try await client.transactionInfo(transactionId: id)
            #expect(fake.requests(.transactionInfo).map(\.status) == [429, 429, 429, 429, 200])
            // Three backoffs of at least 10, 20, 40 ms (half of 20, 40, 80), at most 100 ms each.
            #expect(ContinuousClock.now - started >= .milliseconds(70))
            // Far below a wait for the past or unparsable instant (which would never end).
            #expect(ContinuousClock.now - started < .seconds(60))
        }
    }

    @Test("an absurd Retry-After is capped at maxRetryAfter")
    func absurdRetryAfter() async throws {
        let bed = try APITestBed()
        try await withFakeAPI(bed: bed, client: { bed, fake in
            var configuration = try bed.client(fake).configuration
            configuration.maxRetryAfter = .milliseconds(300)
            return AppStoreServerAPIClient(configuration: configuration, rateLimiter: AppStoreAPIRateLimiter())
        }) { fake, client in
            let id = try Self.addTransaction(fake)
            let tenYears = APITestBed.nowMilliseconds() + 10 * 365 * 86_400_000
            // The largest Int64 must not trap either.
            fake.script([.tooManyRequestsHeader(String(tenYears)), .tooManyRequestsHeader(String(Int64.max))], on: .transactionInfo)
            let started = ContinuousClock.now
            _ = try await client.transactionInfo(transactionId: id)
            let elapsed = ContinuousClock.now - started
            #expect(elapsed >= .milliseconds(600))
            // Ten years uncapped; a loaded machine may add seconds, never years.
            #expect(elapsed < .seconds(60))
        }
    }

    @Test("concurrent callers never exceed the configured rate (from the fake's arrival times)")
    func rateLimit() async throws {
        let rate = 20.0
        try await withFakeAPI(client: { try $0.client($1, requestsPerSecond: rate) }) { fake, client in
            let id = try Self.addTransaction(fake)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<60 { group.addTask { _ = try await client.transactionInfo(transactionId: id) } }
                try await group.waitForAll()
            }
            let arrivals = fake.requests(.transactionInfo).map(\.arrival).sorted()
            #expect(arrivals.count == 60)
            // The client sends at evenly spaced instants; on a loaded machine some requests
            // reach the server late and bunch with the next ones, so a one-second window may
            // hold a few more than the rate. An unspaced burst puts all 60 in one window.
            for (index, start) in arrivals.enumerated() {
                let inWindow = arrivals[index...].prefix { $0 - start < .seconds(1) }.count
                #expect(inWindow <= Int(rate * 1.5), "\(inWindow) requests within 1 s from arrival \(index)")
            }
            // Spaced, not bursted: 60 requests at 20/s take about 2.95 s.
            #expect(arrivals.last! - arrivals.first! >= .milliseconds(2800))
        }
    }

    @Test("two clients of the same app share the process-wide limiter")
    func sharedLimiter() async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake()
        let id = try Self.addTransaction(fake)
        let limiter = AppStoreAPIRateLimiter()
        let configuration = try bed.client(fake, requestsPerSecond: 10).configuration
        let clients = (0..<2).map { _ in AppStoreServerAPIClient(configuration: configuration, rateLimiter: limiter) }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients { for _ in 0..<5 { group.addTask { _ = try await client.transactionInfo(transactionId: id) } } }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        for client in clients { try await client.shutdown() }
        await fake.stop()
        #expect(fake.requests(.transactionInfo).count == 10)
        // 10 requests at 10/s between both clients: the limiter grants them at least 0.1 s apart,
        // so the last goes 0.9 s after the first at the earliest; two separate budgets would take
        // about 0.4 s. Measured around the calls, not between the fake's arrivals: a busy machine
        // delays the first request's connection and bunches arrivals, never the grants.
        #expect(elapsed >= .milliseconds(880))
    }
}

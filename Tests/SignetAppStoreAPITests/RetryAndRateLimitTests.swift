import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
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

    @Test("a Retry-After of 40 minutes is honoured in full: no request of the bucket goes, the wait is logged once with its end")
    func longRetryAfter() async throws {
        let bed = try APITestBed()
        let log = CapturedLog()
        try await withFakeAPI(bed: bed, client: { bed, fake in
            AppStoreServerAPIClient(configuration: try bed.client(fake).configuration, rateLimiter: AppStoreAPIRateLimiter(), logger: log.logger)
        }) { fake, client in
            let id = try Self.addTransaction(fake)
            fake.setResponseDelay(.milliseconds(300))
            // Three calls in flight together all get the 429.
            fake.script(Array(repeating: .tooManyRequests(retryAfter: .seconds(40 * 60)), count: 3), on: .transactionInfo)
            let calls = (0..<3).map { _ in Task { try await client.transactionInfo(transactionId: id) } }
            while fake.requests(.transactionInfo).count < 3 { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .seconds(2))
            #expect(fake.requests(.transactionInfo).count == 3, "a request went during the pause")
            let pauses = log.messages(containing: "Apple asked for a pause")
            #expect(pauses.count == 1, "\(pauses)")
            // The end it names is 40 minutes after the 429, not a capped 15.
            let formatter = ISO8601DateFormatter()
            let named = try #require(pauses.first?.split(separator: " ").compactMap { formatter.date(from: String($0)) }.first)
            let retryAfter = try #require(fake.requests(.transactionInfo).first?.retryAfter.flatMap { Double($0) })
            #expect(abs(named.timeIntervalSince1970 - retryAfter / 1000) < 5, "\(named) against \(retryAfter)")
            for call in calls { call.cancel() }
            for call in calls { await #expect(throws: CancellationError.self) { _ = try await call.value } }
        }
    }

    @Test("an answer larger than the limit is an invalid response at once, not retried")
    func oversizedAnswer() async throws {
        try await withFakeAPI { fake, client in
            // 17 MB of a JSON string: over the 16 MB the client reads.
            let body = Array(#"{"signedTransactionInfo":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 17 << 20) + Array(#""}"#.utf8)
            fake.script([.raw(status: 200, body: body)], on: .transactionInfo)
            let error = await #expect(throws: AppStoreAPIError.self) { try await client.transactionInfo(transactionId: "1") }
            #expect(error?.kind == .invalidResponse)
            #expect(fake.requests(.transactionInfo).count == 1)
        }
    }

    @Test("a 200 {} to the status and transaction-history calls is an invalid response after the retries, never 'no data'")
    func strictAnswers() async throws {
        try await withFakeAPI(client: { try $0.client($1, maxRetries: 1) }) { fake, client in
            let id = try Self.addTransaction(fake)
            let empty = FakeAppStoreAPI.Fault.raw(status: 200, body: Array("{}".utf8))
            fake.script([empty, empty], on: .subscriptionStatuses)
            let statuses = await #expect(throws: AppStoreAPIError.self) { _ = try await client.subscriptionStatuses(transactionId: id) }
            #expect(statuses?.kind == .invalidResponse)
            #expect(fake.requests(.subscriptionStatuses).count == 2)
            fake.script([empty, empty], on: .transactionHistory)
            let history = await #expect(throws: AppStoreAPIError.self) { _ = try await client.transactionHistoryPage(transactionId: id) }
            #expect(history?.kind == .invalidResponse)
            fake.script([empty, empty], on: .testNotificationStatus)
            let token = try await client.requestTestNotification().testNotificationToken
            let status = await #expect(throws: AppStoreAPIError.self) { _ = try await client.testNotificationStatus(token: token) }
            #expect(status?.kind == .invalidResponse)
        }
    }

    @Test("the rate belongs to the bucket: two clients asking different rates both go at the lowest")
    func bucketRate() async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake()
        let id = try Self.addTransaction(fake)
        let limiter = AppStoreAPIRateLimiter()
        let fast = AppStoreServerAPIClient(configuration: try bed.client(fake, requestsPerSecond: 40).configuration, rateLimiter: limiter)
        let slow = AppStoreServerAPIClient(configuration: try bed.client(fake, requestsPerSecond: 5).configuration, rateLimiter: limiter)
        // The slow client books first, so the bucket knows its rate before the fast one asks.
        _ = try await slow.transactionInfo(transactionId: id)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in [fast, slow] { for _ in 0..<4 { group.addTask { _ = try await client.transactionInfo(transactionId: id) } } }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        try await fast.shutdown()
        try await slow.shutdown()
        await fake.stop()
        // Eight more at 5/s: the first goes at `started` at the earliest, the last seven intervals
        // (1.4 s) after it. The fast client's own 40/s would have let its four go within 0.1 s.
        #expect(elapsed >= .milliseconds(1400), "\(elapsed)")
    }

    @Test("Production's 401 goes to Sandbox (an app with no Production release); refused by both, the 401 is thrown")
    func unauthorizedFallsBackToSandbox() async throws {
        let bed = try APITestBed()
        let sandbox = try await bed.startFake(.sandbox)
        let id = try Self.addTransaction(sandbox)
        try await withFakeAPI(.production, bed: bed, client: { try $0.client($1, environment: .production, sandboxFallback: sandbox) }) { production, client in
            production.script([.unauthorized], on: .transactionInfo)
            let found = try await client.lookUpTransaction(transactionId: id)
            #expect(found.environment == .sandbox)
            #expect(production.requests(.transactionInfo).map(\.status) == [401])

            production.script([.unauthorized], on: .transactionInfo)
            sandbox.script([.unauthorized], on: .transactionInfo)
            let error = await #expect(throws: AppStoreAPIError.self) { _ = try await client.lookUpTransaction(transactionId: id) }
            #expect(error?.kind == .unauthorized)
        }
        await sandbox.stop()
    }

    @Test("the Sandbox fallback of a Production lookup is paced at Sandbox's rate, from Sandbox's bucket")
    func sandboxFallbackRate() async throws {
        let bed = try APITestBed()
        let sandbox = try await bed.startFake(.sandbox)
        let samples = APITestBed.samples.compactMap { sample -> (id: String, original: String, signed: String)? in
            guard let id = sample.sample.transactionId, let signed = sample.signedTransaction else { return nil }
            return (id, sample.sample.originalTransactionId ?? id, signed)
        }.prefix(6)
        try #require(samples.count == 6 && Set(samples.map(\.id)).count == 6)
        sandbox.addTransactions(samples.map { .init(transactionId: $0.id, originalTransactionId: $0.original, signedTransactionInfo: $0.signed) })
        try await withFakeAPI(.production, bed: bed, client: {
            try $0.client($1, environment: .production, requestsPerSecond: 200, sandboxFallback: sandbox)
        }) { _, client in
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: AppStoreEnvironment.self) { group in
                for sample in samples {
                    group.addTask { try await client.lookUpTransaction(transactionId: sample.id).environment }
                }
                for try await environment in group { #expect(environment == .sandbox) }
            }
            // Measured around the calls (a busy machine delays and bunches the fake's arrivals,
            // never the grants): Production twice with 0.2 s between, then Sandbox's default 4/s,
            // five intervals of 0.25 s. At Production's 200/s it would all take about 0.25 s.
            let elapsed = ContinuousClock.now - started
            #expect(elapsed >= .milliseconds(1400), "\(elapsed)")
        }
        await sandbox.stop()
        #expect(sandbox.requests(.transactionInfo).count == 6)
    }
}

public import AppStoreModels
import Foundation
public import SignetAppStoreAPI
import SignetCore
public import SignetFixtures
public import SignetJWS
public import SignetOpenSSL
public import SignetTestSupport
public import Testing

/// An API key, the fake server's matching JWT check, signed samples and a verifier for them:
/// what the client's tests and its pipeline components' tests both start from.
public struct APITestBed: Sendable {
    public static let bundleId = "com.example.signet"
    /// One PKI and one set of samples for every test (signing is the slow part).
    public static let pki: TestPKI = try! TestPKI()
    public static let samples: [FakeAppStoreAPISample] = try! FakeAppStoreAPISample.make(count: 60, pki: pki, bundleId: bundleId)

    public let key: ECPrivateKey
    public let credentials: AppStoreAPICredentials
    public let check: FakeAppStoreAPIJWTCheck

    public init() throws {
        key = try ECPrivateKey(generating: .p256)
        // Through PEM: what a .p8 file holds (PKCS#8 "BEGIN PRIVATE KEY").
        credentials = try AppStoreAPICredentials(
            keyId: "KEY123ABCD", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: Self.bundleId,
            privateKeyPEM: key.pemEncoded)
        check = FakeAppStoreAPIJWTCheck(keyId: "KEY123ABCD", issuerId: credentials.issuerId, bundleId: Self.bundleId, publicKey: try key.publicKey)
    }

    public func startFake(_ environment: AppStoreEnvironment = .sandbox) async throws -> FakeAppStoreAPI {
        try await FakeAppStoreAPI.start(environment: environment, jwtCheck: check)
    }

    /// A client of `fake` with fast retries and its own rate limiter (tests run in parallel
    /// and must not share budgets), free of Apple's limits (the fake has none, and Sandbox's
    /// 5/s would make every test slow).
    public func client(
        _ fake: FakeAppStoreAPI, environment: AppStoreEnvironment = .sandbox, requestsPerSecond: Double = 200,
        testNotificationRequestsPerSecond: Double = 50, maxRetries: Int = 4, sandboxFallback: FakeAppStoreAPI? = nil,
        credentials: AppStoreAPICredentials? = nil
    ) throws -> AppStoreServerAPIClient {
        var configuration = try AppStoreAPIConfiguration(
            credentials: credentials ?? self.credentials, environment: environment, baseURL: fake.baseURL,
            sandboxFallbackURL: sandboxFallback?.baseURL, requestsPerSecond: requestsPerSecond,
            testNotificationRequestsPerSecond: testNotificationRequestsPerSecond, enforcingAppleLimits: false)
        configuration.maxRetries = maxRetries
        configuration.initialBackoff = .milliseconds(20)
        configuration.maxBackoff = .milliseconds(100)
        configuration.notFoundRetryDelay = .milliseconds(200)
        configuration.requestTimeout = .seconds(10)
        return AppStoreServerAPIClient(configuration: configuration, rateLimiter: AppStoreAPIRateLimiter())
    }

    /// A verifier trusting the test PKI, for Sandbox data of the test app.
    public static func verifier() throws -> AppStoreVerifier {
        try AppStoreVerifier(configuration: VerifierConfiguration(roots: [pki.root], environment: .sandbox, bundleId: bundleId))
    }

    public static func nowMilliseconds() -> Int64 { WallClock.milliseconds() }

    /// `count` samples stored as sent one minute apart, ending an hour ago.
    public static func history(_ count: Int, failedEvery: Int = 0) -> [FakeAppStoreAPI.StoredNotification] {
        let first = nowMilliseconds() - 3_600_000 - Int64(count) * 60_000
        return samples.prefix(count).enumerated().map { index, sample in
            sample.stored(sentDate: first + Int64(index) * 60_000, failed: failedEvery > 0 && index % failedEvery == 0)
        }
    }

    /// The last two days, as a history request.
    public static func lastTwoDays(onlyFailures: Bool? = nil) -> NotificationHistoryRequest {
        let now = nowMilliseconds()
        return NotificationHistoryRequest(startDate: now - 2 * 86_400_000, endDate: now, onlyFailures: onlyFailures)
    }
}

/// Runs `body` with a started fake and a client of it, then shuts both down.
public func withFakeAPI<T>(
    _ environment: AppStoreEnvironment = .sandbox, bed: APITestBed? = nil,
    client configure: (APITestBed, FakeAppStoreAPI) throws -> AppStoreServerAPIClient = { try $0.client($1) },
    _ body: (FakeAppStoreAPI, AppStoreServerAPIClient) async throws -> T
) async throws -> T {
    let bed = try bed ?? APITestBed()
    let fake = try await bed.startFake(environment)
    let client: AppStoreServerAPIClient
    do {
        client = try configure(bed, fake)
    } catch {
        await fake.stop()
        throw error
    }
    do {
        let result = try await body(fake, client)
        try await client.shutdown()
        await fake.stop()
        return result
    } catch {
        try? await client.shutdown()
        await fake.stop()
        throw error
    }
}

/// Expects `body` to throw an error of type `Refusal` whose `rule` is `rule` (a request the
/// client refuses by Apple's documented rules), and nothing to reach `fake`.
public func expectNotSent<Refusal: Error, Rule: Equatable>(
    _ rule: Rule, as _: Refusal.Type, rule ruleOf: (Refusal) -> Rule, _ fake: FakeAppStoreAPI, _ body: () async throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let before = fake.requests.count
    do {
        try await body()
        Issue.record("sent; expected \(rule)", sourceLocation: sourceLocation)
    } catch let error as Refusal {
        #expect(ruleOf(error) == rule, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error); expected \(rule)", sourceLocation: sourceLocation)
    }
    #expect(fake.requests.count == before, "a refused request reached the fake", sourceLocation: sourceLocation)
}

/// Expects `body` to throw Apple's error `code` with HTTP `status`.
public func expectAppleRefusal(_ code: Int, status: Int, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
    do {
        try await body()
        Issue.record("succeeded; expected Apple's \(code)", sourceLocation: sourceLocation)
    } catch let error as AppStoreAPIError {
        #expect(error.errorCode == code && error.status == status && error.kind == .permanent, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error); expected Apple's \(code)", sourceLocation: sourceLocation)
    }
}

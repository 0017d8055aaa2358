import AppStoreModels
import Foundation
import Logging
@testable import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetState
import SignetTestSupport
import Testing

/// Issue 53, item 4: Apple's pause (a 429's Retry-After) lived in memory, so a run started
/// during one answered early, which Apple counts. With a SQLite store the pause is kept in
/// the store's budget, as PostgreSQL keeps it for every instance.
@Suite("App Store API budgets kept in the SQLite store")
struct RateBudgetPersistenceTests {
    static let quiet = Logger(label: "budget-test") { _ in SwiftLogNoOpLogHandler() }
    static let bucket = AppStoreAPIRateLimiter.Bucket(bundleId: "com.example.signet", environment: .sandbox, endpointClass: .consumption)

    @Test("a pause set before a restart is waited out by the next process's limiter; other buckets are not held")
    func pauseOutlivesTheProcess() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-budget")
        defer { directory.remove() }
        let path = directory.path("signet.sqlite")
        do {
            let store = try SQLiteStateStore(path: path)
            let limiter = AppStoreAPIRateLimiter.forPipeline([StateStoreResource(store: store)], logger: Self.quiet)
            #expect(await limiter.pause(Self.bucket, for: .seconds(2)))
            try store.close()
        }
        // The next run: a new store object and a new limiter over the same file.
        let store = try SQLiteStateStore(path: path)
        defer { try? store.close() }
        let limiter = AppStoreAPIRateLimiter.forPipeline([StateStoreResource(store: store)], logger: Self.quiet)
        let started = ContinuousClock.now
        let other = AppStoreAPIRateLimiter.Bucket(bundleId: "com.example.signet", environment: .sandbox, endpointClass: .standard)
        try await limiter.acquire(other, requestsPerSecond: 50)
        #expect(ContinuousClock.now - started < .seconds(1), "another endpoint's budget is not paused")
        try await limiter.acquire(Self.bucket, requestsPerSecond: 50)
        #expect(ContinuousClock.now - started >= .milliseconds(1_500), "the pause set before the restart was waited out")
    }

    @Test("slots booked in the store keep the spacing across two limiters on one file")
    func spacingIsKept() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-budget")
        defer { directory.remove() }
        let store = try SQLiteStateStore(path: directory.path("signet.sqlite"))
        defer { try? store.close() }
        let first = try store.bookSlot(bucket: "b", interval: .milliseconds(200))
        let second = try store.bookSlot(bucket: "b", interval: .milliseconds(200))
        #expect(first <= .milliseconds(10))
        #expect(second > .milliseconds(150) && second <= .milliseconds(210), "\(second)")
        // A read-only store cannot book: its process spends its own budget.
        var options = SQLiteStateStore.Options()
        options.readOnly = true
        let reader = try SQLiteStateStore(path: directory.path("signet.sqlite"), options: options)
        defer { try? reader.close() }
        #expect(AppStoreAPIRateLimiter.forPipeline([StateStoreResource(store: reader)], logger: Self.quiet) === AppStoreAPIRateLimiter.shared)
    }
}

import AppStoreModels
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetAppStorePipeline
import SignetCore
import SignetState
import SignetTestSupport
import Testing

@Suite("appstore_reconcile: every stale purchase is asked about, in the store it was bought in")
struct AppStoreReconcileStageTests {
    static let day: Int64 = 86_400_000

    /// A subscription that was to renew an hour ago and did not, bought in `environment`.
    static func stale(_ id: String, environment: String?, now: Int64) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(originalTransactionId: id, state: .active, entitled: true, evaluatedAt: now - day)
        snapshot.productType = "Auto-Renewable Subscription"
        snapshot.autoRenewEnabled = true
        snapshot.expiresDate = now - 3_600_000
        snapshot.environment = environment
        return snapshot
    }

    @Test("1,500 purchases that stay stale do not hide the ones after them; Sandbox purchases are asked of Sandbox, unrecorded ones of both")
    func everyStalePurchaseIsAsked() async throws {
        let bed = try APITestBed()
        let sandbox = try await bed.startFake(.sandbox)
        let production = try await bed.startFake(.production)
        do {
            try await everyStalePurchaseIsAsked(bed: bed, sandbox: sandbox, production: production)
        } catch {
            await sandbox.stop()
            await production.stop()
            throw error
        }
        await sandbox.stop()
        await production.stop()
    }

    func everyStalePurchaseIsAsked(bed: APITestBed, sandbox: FakeAppStoreAPI, production: FakeAppStoreAPI) async throws {
        let now = WallClock.milliseconds()
        let store = InMemoryStateStore()
        // Apple knows none of the Production ones (4040010): they stay stale sweep after sweep.
        let productionIds = (0..<1500).map { String(format: "p%04d", $0) }
        let signed = try #require(APITestBed.samples.compactMap(\.signedTransaction).first)
        sandbox.addTransactions(["s1", "s2", "s3", "unrecorded"].map { .init(transactionId: $0, originalTransactionId: $0, signedTransactionInfo: signed) })
        try store.withTransaction { transaction in
            for id in productionIds { try transaction.save(Self.stale(id, environment: "Production", now: now)) }
            for id in ["s1", "s2", "s3"] { try transaction.save(Self.stale(id, environment: "Sandbox", now: now)) }
            try transaction.save(Self.stale("unrecorded", environment: nil, now: now))
        }
        var options = AppStoreReconcileStage.Options()
        options.interval = .milliseconds(100)
        options.limit = 1000
        // 1,500 "Apple knows no purchase" warnings are not the test's output.
        let quiet = Logger(label: "reconcile-test") { _ in SwiftLogNoOpLogHandler() }
        let stage = AppStoreReconcileStage(options: options, store: StateStoreResource(store: store), logger: quiet) {
            try bed.client(production, environment: .production, requestsPerSecond: 2000, sandboxFallback: sandbox)
        }
        try await stage.open()
        var statuses = 0
        let deadline = ContinuousClock.now + .seconds(60)
        func sandboxAsked() -> Set<String> { Set(sandbox.requests(.subscriptionStatuses).compactMap(\.pathParameter)) }
        while sandboxAsked() != ["s1", "s2", "s3", "unrecorded"] || production.requests(.subscriptionStatuses).count < 1501,
            ContinuousClock.now < deadline
        {
            // The stage hands its statuses to the pipeline between batches; drain them as the runner would.
            if let batch = try await stage.tick() { statuses += batch.records.count }
            try await Task.sleep(for: .milliseconds(20))
        }
        // A few more sweeps: nothing is asked twice for the same period.
        try await Task.sleep(for: .milliseconds(500))
        while let batch = try await stage.tick() { statuses += batch.records.count }
        try await stage.close()

        let askedProduction = production.requests(.subscriptionStatuses).compactMap(\.pathParameter)
        #expect(sandboxAsked() == ["s1", "s2", "s3", "unrecorded"])
        #expect(Set(askedProduction) == Set(productionIds + ["unrecorded"]), "\(Set(productionIds).subtracting(askedProduction).count) never asked")
        // Once each; the unrecorded one twice (a new id may take a moment to appear in Production).
        #expect(askedProduction.count == 1500 + 2, "\(askedProduction.count)")
        #expect(sandbox.requests(.subscriptionStatuses).count == 4)
        #expect(statuses == 4)
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
@testable import SignetState
import SignetStateTestSupport
import Testing

/// One store for Production and Sandbox purchases (a pipeline with `environment: [Production,
/// Sandbox]`): each purchase stays in its environment.
@Suite struct EnvironmentTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day

    func subscribed(_ otid: String, _ environment: AppStoreEnvironment, uuid: String, signed: Int64) -> VerifiedPayload {
        F.notification(
            .subscribed, .initialBuy, uuid: uuid, signed: signed,
            transaction: F.transaction(
                otid: otid, id: otid + "-\(signed)", purchase: t0, expires: t0 + 30 * day, signed: signed, environment: environment),
            renewal: F.renewal(otid: otid, signed: signed))
    }

    @Test(arguments: StoreKind.available)
    func productionAndSandboxPurchasesLiveApartInOneStore(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let events = try await harness.runEach([subscribed("1000", .production, uuid: "p1", signed: t0), subscribed("2000", .sandbox, uuid: "s1", signed: t0)])
        #expect(events.map { $0.json["environment"] as? String } == ["Production", "Sandbox"])

        // A Sandbox record naming the Production purchase: dead-lettered, the purchase unchanged.
        let crossing = try await harness.run([subscribed("1000", .sandbox, uuid: "x1", signed: t0 + day)])
        #expect(crossing.rejected.map(\.reason) == [.environmentConflict], "\(kind)")
        #expect(crossing.rejected.first?.detail.contains("stored as a Production purchase") == true)
        #expect(try store.subscription(originalTransactionId: "1000")?.evaluatedAt == t0)
        #expect(try store.subscription(originalTransactionId: "1000")?.environment == "Production")

        let token = AppAccountToken("5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01")!
        func answered(_ environment: String?) throws -> [String?] {
            let json = try StateJSON.entitlements(.appAccountToken(token), environment: environment, in: store, at: t0 + day)
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [[String: Any]])
            return rows.map { $0["originalTransactionId"] as? String }
        }
        #expect(try answered(nil) == ["1000", "2000"], "both, each with its environment")
        #expect(try answered("Production") == ["1000"])
        #expect(try answered("Sandbox") == ["2000"])
    }
}

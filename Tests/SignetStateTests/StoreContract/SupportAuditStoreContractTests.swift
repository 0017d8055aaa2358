import Foundation
import SignetState
import SignetStateTestSupport
import Testing

/// The store contract for the support audit log (``SupportAuditStore``), on every store kind.
@Suite struct SupportAuditStoreContractTests {
    static func record(_ id: String, purchase: String? = "o-1", product: String? = nil, at: Int64, action: String = "extend") -> SupportActionRecord {
        SupportActionRecord(
            requestIdentifier: id, actor: "ana", action: action, originalTransactionId: purchase, productId: product,
            parameters: #"{"extendByDays":3}"#, at: at)
    }

    @Test("an action is kept once per request identifier: beginning it again returns the first, finished or not", arguments: StoreKind.available)
    func idempotent(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(try store.supportAction(requestIdentifier: "r-1") == nil, "\(kind)")
        let first = Self.record("r-1", at: 1_000)
        #expect(try store.beginSupportAction(first) == first, "\(kind)")
        var other = Self.record("r-1", at: 2_000)
        other.actor = "bob"
        #expect(try store.beginSupportAction(other) == first, "a second begin keeps the first (\(kind))")

        var done = first
        done.status = .done
        done.answer = #"{"success":true}"#
        done.answeredAt = 1_500
        try store.finishSupportAction(done)
        #expect(try store.supportAction(requestIdentifier: "r-1") == done, "\(kind)")
        #expect(try store.beginSupportAction(other) == done, "\(kind)")
    }

    @Test("listed per purchase (any age) and since an instant, oldest first, with a limit", arguments: StoreKind.available)
    func listings(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        for record in [
            Self.record("r-3", at: 3_000), Self.record("r-1", at: 1_000), Self.record("r-2", purchase: "o-2", at: 2_000),
            Self.record("m-1", purchase: nil, product: "pro", at: 2_500, action: "extend_all"),
        ] {
            _ = try store.beginSupportAction(record)
        }
        #expect(try store.supportActions(originalTransactionId: "o-1").map(\.requestIdentifier) == ["r-1", "r-3"], "\(kind)")
        #expect(try store.supportActions(originalTransactionId: "o-9").isEmpty, "\(kind)")
        #expect(try store.supportActions(since: 2_000, limit: 10).map(\.requestIdentifier) == ["r-2", "m-1", "r-3"], "\(kind)")
        #expect(try store.supportActions(since: 0, limit: 2).map(\.requestIdentifier) == ["r-1", "r-2"], "\(kind)")
        #expect(try store.supportAction(requestIdentifier: "m-1")?.productId == "pro", "\(kind)")
    }
}

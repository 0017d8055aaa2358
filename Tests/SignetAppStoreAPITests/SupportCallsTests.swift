import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetFixtures
import SignetJWS
import SignetTestSupport
import Testing

/// Apple's customer-support calls against the fake: Apple's rules checked before sending
/// (nothing reaches the fake), each endpoint's path, body and budget, Apple's refusals thrown
/// with their codes, signed answers verified, a retried extension resent with its identifier.
@Suite("Support calls")
struct SupportCallsTests {
    static let upper = "7E1D6A3C-0F2B-4B8E-9C3D-5A6B7C8D9E0F"
    static let day: Int64 = 86_400_000

    /// `body` must throw a ``SupportCallError`` of `rule`, and nothing may reach the fake.
    static func refused(
        _ rule: SupportCallError.Rule, _ fake: FakeAppStoreAPI, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await expectNotSent(rule, as: SupportCallError.self, rule: \.rule, fake, body, sourceLocation: sourceLocation)
    }

    static func apple(_ code: Int, status: Int, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
        await expectAppleRefusal(code, status: status, body, sourceLocation: sourceLocation)
    }

    static var signedTransactions: [String] { APITestBed.samples.compactMap(\.signedTransaction) }

    @Test("Look Up Order ID: Production only, the order's transactions verified, an unknown order status 1 without transactions")
    func orderLookup() async throws {
        try await withFakeAPI(.production, client: { try $0.client($1, environment: .production) }) { fake, client in
            let signed = Array(Self.signedTransactions.prefix(2))
            fake.support.addOrder("MK5TTTVWJH", signedTransactions: signed)
            let found = try await client.lookUpOrder(orderId: "MK5TTTVWJH")
            #expect(found.isValid && found.signedTransactions == signed)
            let verifier = try APITestBed.verifier()
            #expect(try found.signedTransactions?.map { try verifier.verifyTransaction($0).payload.transactionId } != nil)
            #expect(fake.requests(.orderLookup).last?.pathParameter == "MK5TTTVWJH")
            let unknown = try await client.lookUpOrder(orderId: "NOPE")
            #expect(!unknown.isValid && unknown.signedTransactions == nil)
            await Self.refused(.invalidTransactionId, fake) { _ = try await client.lookUpOrder(orderId: "") }
        }
        try await withFakeAPI(.sandbox) { fake, client in
            await Self.refused(.notInSandbox, fake) { _ = try await client.lookUpOrder(orderId: "MK5TTTVWJH") }
        }
    }

    @Test("Get Refund History: every page by revision, each refund verified, oldest first")
    func refundHistory() async throws {
        try await withFakeAPI { fake, client in
            let refunds = Array(Self.signedTransactions.prefix(45))
            fake.support.addRefunds(for: ["1000", "1001"], signedTransactions: refunds)
            let all = try await client.refundHistory(transactionId: "1001", verifier: try APITestBed.verifier())
            #expect(all.count == 45)
            let pages = fake.requests(.refundHistory)
            #expect(pages.map { $0.query["revision"]?.first } == [nil, "rev-20", "rev-40"], "the first page without a revision, then each one given")
            #expect(try await client.refundHistory(transactionId: "999", verifier: try APITestBed.verifier()).isEmpty)
        }
    }

    @Test("Extend a Subscription Renewal Date: Apple's limits checked first; the body as documented; refusals with their codes")
    func extend() async throws {
        try await withFakeAPI { fake, client in
            let now = APITestBed.nowMilliseconds()
            fake.support.addSubscription("500", expiresDate: now + 5 * Self.day)
            fake.support.addSubscription("600", expiresDate: now + 5 * Self.day, familyShared: true)
            fake.support.addSubscription("700", expiresDate: now + 5 * Self.day, eligible: false)
            let request = ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: Self.upper)
            let answer = try await client.extendRenewalDate(originalTransactionId: "500", request)
            #expect(answer.success && answer.effectiveDate == now + 12 * Self.day && answer.originalTransactionId == "500")
            let sent = try #require(fake.requests(.renewalExtension).last)
            #expect(sent.method == "PUT" && sent.pathParameter == "500")
            #expect(sent.jsonBody?["extendByDays"] as? Int == 7 && sent.jsonBody?["extendReasonCode"] as? Int == 3)
            #expect(sent.jsonBody?["requestIdentifier"] as? String == Self.upper.lowercased())

            for days in [0, 91, -1] {
                await Self.refused(.invalidExtendByDays, fake) {
                    _ = try await client.extendRenewalDate(
                        originalTransactionId: "500", ExtendRenewalDateRequest(extendByDays: days, extendReasonCode: .other, requestIdentifier: "r"))
                }
            }
            await Self.refused(.invalidRequestIdentifier, fake) {
                _ = try await client.extendRenewalDate(
                    originalTransactionId: "500",
                    ExtendRenewalDateRequest(extendByDays: 1, extendReasonCode: .other, requestIdentifier: String(repeating: "x", count: 129)))
            }
            await Self.refused(.invalidTransactionId, fake) { _ = try await client.extendRenewalDate(originalTransactionId: "", request) }

            let other = { ExtendRenewalDateRequest(extendByDays: 1, extendReasonCode: .customerSatisfaction, requestIdentifier: UUID().uuidString) }
            await Self.apple(4_030_007, status: 403) { _ = try await client.extendRenewalDate(originalTransactionId: "600", other()) }
            await Self.apple(4_030_004, status: 403) { _ = try await client.extendRenewalDate(originalTransactionId: "700", other()) }
            await Self.apple(4_040_005, status: 404) { _ = try await client.extendRenewalDate(originalTransactionId: "404", other()) }
            // A second extension within 365 days is Apple's; a third is refused.
            _ = try await client.extendRenewalDate(originalTransactionId: "500", other())
            await Self.apple(4_030_004, status: 403) { _ = try await client.extendRenewalDate(originalTransactionId: "500", other()) }
            #expect(fake.support.extensionCounts["500"] == 2)
        }
    }

    @Test("a timed-out extension is resent with the same requestIdentifier, and extends once")
    func extendRetried() async throws {
        try await withFakeAPI { fake, client in
            fake.support.addSubscription("500", expiresDate: APITestBed.nowMilliseconds() + 5 * Self.day)
            fake.script([.error(status: 500, errorCode: 5_000_001)], on: .renewalExtension)
            let request = ExtendRenewalDateRequest(extendByDays: 3, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: "ticket-4711")
            let first = try await client.extendRenewalDate(originalTransactionId: "500", request)
            #expect(first.success)
            let sent = fake.requests(.renewalExtension)
            #expect(sent.count == 2 && Set(sent.map { $0.jsonBody?["requestIdentifier"] as? String }) == ["ticket-4711"])
            // The operator runs the command again with the same identifier: the same answer, no second extension.
            let again = try await client.extendRenewalDate(originalTransactionId: "500", request)
            #expect(again == first)
            #expect(fake.support.extensionCounts["500"] == 1)
        }
    }

    @Test("the mass extension: a UUID sent lower-case, storefronts checked, the same request again taken once; its status until complete")
    func massExtension() async throws {
        try await withFakeAPI { fake, client in
            let request = MassExtendRenewalDateRequest(
                extendByDays: 3, extendReasonCode: .serviceIssueOrOutage, requestIdentifier: Self.upper, productId: "com.example.pro",
                storefrontCountryCodes: ["USA", "FRA"])
            #expect(try await client.massExtendRenewalDates(request).requestIdentifier == Self.upper.lowercased())
            #expect(try await client.massExtendRenewalDates(request).requestIdentifier == Self.upper.lowercased())
            #expect(fake.support.massExtensionBodies.count == 1)
            var bad = request
            bad.requestIdentifier = "ticket-1"
            await Self.refused(.invalidRequestIdentifier, fake) { _ = try await client.massExtendRenewalDates(bad) }
            bad = request
            bad.storefrontCountryCodes = []
            await Self.refused(.emptyStorefrontCountryCodes, fake) { _ = try await client.massExtendRenewalDates(bad) }
            bad.storefrontCountryCodes = ["US"]
            await Self.refused(.invalidStorefrontCountryCode, fake) { _ = try await client.massExtendRenewalDates(bad) }
            bad = request
            bad.productId = ""
            await Self.refused(.invalidProductId, fake) { _ = try await client.massExtendRenewalDates(bad) }

            let pending = try await client.massExtensionStatus(productId: "com.example.pro", requestIdentifier: Self.upper)
            #expect(!pending.complete && pending.succeededCount == nil)
            fake.support.completeMassExtension(Self.upper.lowercased(), succeeded: 1200, failed: 3)
            let done = try await client.massExtensionStatus(productId: "com.example.pro", requestIdentifier: Self.upper)
            #expect(done.complete && done.succeededCount == 1200 && done.failedCount == 3 && done.completeDate != nil)
            #expect(fake.requests(.massExtensionStatus).allSatisfy { $0.pathParameter == "com.example.pro" })
            await Self.apple(4_040_009, status: 404) {
                _ = try await client.massExtensionStatus(productId: "com.example.other", requestIdentifier: Self.upper)
            }
        }
    }

    @Test("Set App Account Token: the token sent lower-case in Apple's body; renewals and family copies refused by Apple")
    func appAccountToken() async throws {
        try await withFakeAPI { fake, client in
            fake.support.addSubscription("500", expiresDate: APITestBed.nowMilliseconds())
            fake.support.addSubscription("600", expiresDate: APITestBed.nowMilliseconds(), familyShared: true)
            fake.support.addRenewal("501")
            let token = try #require(AppAccountToken(Self.upper))
            try await client.setAppAccountToken(originalTransactionId: "500", token)
            #expect(fake.support.appAccountTokens["500"] == Self.upper.lowercased())
            #expect(fake.requests(.appAccountToken).last?.jsonBody as? [String: String] == ["appAccountToken": Self.upper.lowercased()])
            await Self.apple(4_000_187, status: 400) { try await client.setAppAccountToken(originalTransactionId: "501", token) }
            await Self.apple(4_000_185, status: 400) { try await client.setAppAccountToken(originalTransactionId: "600", token) }
            await Self.apple(4_040_005, status: 404) { try await client.setAppAccountToken(originalTransactionId: "404", token) }
        }
    }

    @Test("Get App Transaction Info: the signed app transaction, verified; none is Apple's 4040019")
    func appTransaction() async throws {
        try await withFakeAPI { fake, client in
            let now = APITestBed.nowMilliseconds()
            let signed = try APITestBed.pki.signer.sign(json: """
                {"appTransactionId":"705000000000001","bundleId":"\(APITestBed.bundleId)","receiptType":"Sandbox",\
                "receiptCreationDate":\(now - 1000),"originalPurchaseDate":\(now - 9 * Self.day),"originalApplicationVersion":"1.0",\
                "signedDate":\(now - 1000)}
                """)
            fake.support.addAppTransaction(for: ["1000", "705000000000001"], signed: signed)
            let answer = try await client.appTransactionInfo(transactionId: "1000")
            #expect(try APITestBed.verifier().verifyAppTransaction(answer.signedAppTransactionInfo).payload.appTransactionId == "705000000000001")
            await Self.apple(4_040_019, status: 404) { _ = try await client.appTransactionInfo(transactionId: "2000") }
        }
    }

    @Test("each support endpoint spends its own budget at Apple's rate (10, 10, 20, 20, 1 a second in Production; a tenth in Sandbox)")
    func budgets() {
        let expected: [(AppStoreAPIEndpointClass, Double)] = [
            (.orderLookup, 10), (.refundHistory, 10), (.renewalExtension, 20), (.appAccountToken, 20), (.massExtension, 1),
        ]
        for (endpointClass, limit) in expected {
            #expect(endpointClass.appleLimit(in: .production) == limit, "\(endpointClass)")
            #expect(endpointClass.appleLimit(in: .sandbox) == limit / 10, "\(endpointClass)")
            #expect(endpointClass.defaultRate(in: .production) == limit, "\(endpointClass)")
        }
    }
}

import AppStoreModels
import Foundation
import Logging
import SignetAppStoreAPI
@testable import SignetAppStorePipeline
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetState
import Synchronization
import Testing

/// `RetentionResponder` called directly: each rule condition matched and not matched, the
/// default for an unknown purchase, a slow store and a failing one, offers signed for the
/// request's purchase.
@Suite("retention: the decision from the store")
struct RetentionResponderTests {
    static let pki = try! TestPKI()
    static let purchase = "2000000123456789"
    static let product = "com.example.signet.monthly"
    static let defaultMessage = "0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11"
    static let message = "11111111-2222-4333-8444-555555555555"

    static func verifier() throws -> AppStoreVerifier {
        try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [pki.root], environment: .sandbox, bundleId: "com.example.signet",
            appAppleId: RealtimeRequestFixtures.defaultAppAppleId))
    }

    /// A request signed now for `purchase`, from `locale`.
    static func request(purchase: String = purchase, product: String = product, locale: String = "en-US") throws -> [UInt8] {
        let payload = RealtimeRequestFixtures.payload(
            .init(originalTransactionId: purchase, productId: product), appAppleId: RealtimeRequestFixtures.defaultAppAppleId,
            environment: "Sandbox", requestIdentifier: UUID(), signedDate: Int64(Date().timeIntervalSince1970 * 1000) - 1000,
            locale: locale)
        return Array(#"{"signedPayload":"\#(try pki.signer.sign(payload: payload))"}"#.utf8)
    }

    static func snapshot(_ state: SubscriptionState, revoked: Bool = false, appTransactionId: String? = nil) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(originalTransactionId: purchase, state: state, entitled: state == .active)
        snapshot.productId = product
        snapshot.environment = "Sandbox"
        snapshot.appTransactionId = appTransactionId
        if revoked { snapshot.revocationDate = 1_700_000_000_000 }
        return snapshot
    }

    static func store(_ snapshots: [SubscriptionSnapshot], restrictions: [ConsentRestriction] = [], names: EntitlementNames = .none) throws -> InMemoryStateStore {
        let store = InMemoryStateStore()
        try store.withTransaction { transaction in
            for snapshot in snapshots { try transaction.save(snapshot) }
            for restriction in restrictions { try transaction.save(restriction) }
        }
        try store.replaceEntitlementNames(names)
        return store
    }

    static func responder(_ rules: [RetentionRule], store: any StateStore, signer: OfferSigner? = nil, timeout: Duration = .milliseconds(150)) throws -> RetentionResponder {
        RetentionResponder(
            policy: RetentionPolicy(defaultMessage: defaultMessage, rules: rules, decisionTimeout: timeout), verifier: try verifier(),
            store: store, signer: signer, logger: Logger(label: "test"))
    }

    static func answer(_ reply: RetentionResponder.Reply) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any], "\(reply)")
    }

    @Test("each condition: the rule answers when it holds and the default otherwise")
    func conditions() async throws {
        let rule = { (name: String, configure: (inout RetentionRule) -> Void) -> RetentionRule in
            var rule = RetentionRule(name: name, answer: .message(messageIdentifier: Self.message))
            configure(&rule)
            return rule
        }
        let names = EntitlementNames(["pro": [Self.product]])
        let cases: [(RetentionRule, SubscriptionSnapshot, String, Bool)] = [
            (rule("product") { $0.products = ["com.example.signet.*"] }, Self.snapshot(.active), "en-US", true),
            (rule("product") { $0.products = ["com.example.other"] }, Self.snapshot(.active), "en-US", false),
            (rule("state") { $0.states = [.billingRetry] }, Self.snapshot(.billingRetry), "en-US", true),
            (rule("state") { $0.states = [.billingRetry] }, Self.snapshot(.active), "en-US", false),
            (rule("entitlement") { $0.entitlements = ["pro"] }, Self.snapshot(.active), "en-US", true),
            (rule("entitlement") { $0.entitlements = ["max"] }, Self.snapshot(.active), "en-US", false),
            (rule("refunded") { $0.refunded = true }, Self.snapshot(.refunded, revoked: true), "en-US", true),
            (rule("refunded") { $0.refunded = false }, Self.snapshot(.active, revoked: true), "en-US", false),
            (rule("locale") { $0.locales = ["en-US"] }, Self.snapshot(.active), "en-US", true),
            (rule("locale") { $0.locales = ["en-US"] }, Self.snapshot(.active), "en-us", false),
            (rule("environment") { $0.environments = ["Sandbox"] }, Self.snapshot(.active), "en-US", true),
            (rule("environment") { $0.environments = ["Production"] }, Self.snapshot(.active), "en-US", false),
        ]
        for (rule, snapshot, locale, matches) in cases {
            let responder = try Self.responder([rule], store: try Self.store([snapshot], names: names))
            let reply = await responder.respond(to: try Self.request(locale: locale))
            #expect(reply.status == 200)
            let expected = matches ? Self.message : Self.defaultMessage
            #expect((try Self.answer(reply)["message"] as? [String: String]) == ["messageIdentifier": expected], "\(rule.name) \(matches)")
            #expect(reply.result == (matches ? "answered" : "default") && reply.reason == (matches ? rule.name : "no_rule"), "\(reply)")
        }
    }

    @Test("refund_requested: a refund question about any of the purchase's transactions (a renewal's, not only the latest) decides it")
    func refundRequested() async throws {
        let asked = try Self.store([Self.snapshot(.active)])
        try asked.withTransaction { transaction in
            // Asked about an earlier renewal: the snapshot's latest transaction is another one.
            try transaction.save(ConsumptionRequestRecord(
                transactionId: "renewal-1", originalTransactionId: Self.purchase, productId: Self.product,
                requestedAt: 1_700_000_000_000, receivedAt: 1_700_000_000_000))
            // Another purchase's question decides nothing for this one.
            try transaction.save(ConsumptionRequestRecord(
                transactionId: "other-1", originalTransactionId: "other", requestedAt: 1_700_000_000_000, receivedAt: 1_700_000_000_000))
        }
        let never = try Self.store([Self.snapshot(.active)])
        try never.withTransaction { transaction in
            try transaction.save(ConsumptionRequestRecord(
                transactionId: "other-1", originalTransactionId: "other", requestedAt: 1_700_000_000_000, receivedAt: 1_700_000_000_000))
        }
        for (store, wanted, matches) in [(asked, true, true), (asked, false, false), (never, true, false), (never, false, true)] {
            let rule = RetentionRule(name: "asked-refund", refundRequested: wanted, answer: .message(messageIdentifier: Self.message))
            let responder = try Self.responder([rule], store: store)
            let reply = await responder.respond(to: try Self.request())
            #expect(reply.result == (matches ? "answered" : "default"), "refund_requested: \(wanted) \(reply)")
        }
    }

    @Test("a customer who withdrew consent is reached only by a rule that says consent_restricted: true")
    func consent() async throws {
        let restricted = ConsentRestriction(appTransactionId: "704000000000001", rescindedAt: 1_700_000_000_000)
        let store = try Self.store([Self.snapshot(.active, appTransactionId: "704000000000001")], restrictions: [restricted])
        let everyone = RetentionRule(name: "everyone", answer: .message(messageIdentifier: Self.message))
        var only = everyone
        only.name = "restricted"
        only.consentRestricted = true
        #expect(try await Self.responder([everyone], store: store).respond(to: try Self.request()).reason == "no_rule")
        #expect(try await Self.responder([everyone, only], store: store).respond(to: try Self.request()).reason == "restricted")
        // Cleared: the ordinary rules reach the customer again.
        var cleared = restricted
        cleared.clearedAt = 1_700_000_100_000
        let clearedStore = try Self.store([Self.snapshot(.active, appTransactionId: "704000000000001")], restrictions: [cleared])
        #expect(try await Self.responder([only, everyone], store: clearedStore).respond(to: try Self.request()).reason == "everyone")
    }

    @Test("a purchase the store does not know, or knows in the other environment, gets the default")
    func unknownPurchase() async throws {
        var production = Self.snapshot(.active)
        production.environment = "Production"
        let rule = RetentionRule(name: "all", answer: .message(messageIdentifier: Self.message))
        #expect(try await Self.responder([rule], store: try Self.store([])).respond(to: try Self.request()).reason == "unknown_purchase")
        #expect(try await Self.responder([rule], store: try Self.store([production])).respond(to: try Self.request()).reason == "unknown_purchase")
    }

    /// A store whose reads take `delay` or fail.
    final class SlowStore: StateStore {
        let inner: InMemoryStateStore
        let delay: Duration
        let fails: Bool
        init(_ inner: InMemoryStateStore, delay: Duration, fails: Bool = false) {
            self.inner = inner
            self.delay = delay
            self.fails = fails
        }
        func subscription(originalTransactionId: String) throws -> SubscriptionSnapshot? {
            Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            if fails { throw StateStoreError("the database is down") }
            return try inner.subscription(originalTransactionId: originalTransactionId)
        }
        func subscriptions(appAccountToken: AppAccountToken) throws -> [SubscriptionSnapshot] { [] }
        func consentRestriction(appTransactionId: String) throws -> ConsentRestriction? { nil }
        var entitlementNames: EntitlementNames { .none }
        func close() throws {}
        var roles: StateStoreRoles { inner.roles }
    }

    @Test("a store slower than decision_timeout answers the default by then, and one that fails at once")
    func slowAndFailingStores() async throws {
        let rule = RetentionRule(name: "all", answer: .message(messageIdentifier: Self.message))
        let slow = SlowStore(try Self.store([Self.snapshot(.active)]), delay: .seconds(2))
        let responder = try Self.responder([rule], store: slow, timeout: .milliseconds(100))
        let started = ContinuousClock.now
        let reply = await responder.respond(to: try Self.request())
        #expect(ContinuousClock.now - started < .milliseconds(1500), "answered after \(ContinuousClock.now - started)")
        #expect(reply.status == 200 && reply.reason == "timeout")
        #expect((try Self.answer(reply)["message"] as? [String: String]) == ["messageIdentifier": Self.defaultMessage])
        let failing = SlowStore(try Self.store([Self.snapshot(.active)]), delay: .zero, fails: true)
        let failed = try await Self.responder([rule], store: failing).respond(to: try Self.request())
        #expect(failed.status == 200 && failed.reason == "store_error", "\(failed)")
    }

    @Test("a promotional offer is signed for the request's purchase (V2: transactionId the originalTransactionId; V1: its fields), and without a key the default is answered")
    func offers() async throws {
        let credentials = try AppStoreAPICredentials(
            keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: "com.example.signet",
            privateKey: try ECPrivateKey(generating: .p256))
        let signer = OfferSigner(credentials: credentials)
        let rule = RetentionRule(name: "offer", answer: .promotionalOffer(messageIdentifier: Self.message, offerIdentifier: "stay.50", productId: nil))
        let store = try Self.store([Self.snapshot(.billingRetry)])
        let reply = try await Self.responder([rule], store: store, signer: signer).respond(to: try Self.request())
        let offer = try #require(try Self.answer(reply)["promotionalOffer"] as? [String: Any], "\(reply)")
        #expect(offer["messageIdentifier"] as? String == Self.message)
        let jws = try #require(offer["promotionalOfferSignatureV2"] as? String)
        var part = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        let decoded = try #require(Data(base64Encoded: part))
        let claims = try #require(try JSONSerialization.jsonObject(with: decoded) as? [String: Any])
        #expect(claims["transactionId"] as? String == Self.purchase)
        #expect(claims["productId"] as? String == Self.product && claims["offerIdentifier"] as? String == "stay.50")
        #expect(claims["aud"] as? String == "promotional-offer" && claims["bid"] as? String == "com.example.signet")

        var v1Policy = RetentionPolicy(defaultMessage: Self.defaultMessage, rules: [rule])
        v1Policy.offerSignature = .v1
        let v1 = await RetentionResponder(policy: v1Policy, verifier: try Self.verifier(), store: store, signer: signer, logger: Logger(label: "test"))
            .respond(to: try Self.request())
        let legacy = try #require((try Self.answer(v1)["promotionalOffer"] as? [String: Any])?["promotionalOfferSignatureV1"] as? [String: Any], "\(v1)")
        #expect(Set(legacy.keys) == ["encodedSignature", "productId", "nonce", "timestamp", "keyId", "offerIdentifier"])
        #expect((legacy["nonce"] as? String) == (legacy["nonce"] as? String)?.lowercased() && legacy["keyId"] as? String == "2X9R4HXF34")

        let unsigned = try await Self.responder([rule], store: store, signer: nil).respond(to: try Self.request())
        #expect(unsigned.status == 200 && unsigned.reason == "signing_failed", "\(unsigned)")
    }

    @Test("a body that is not a verified request of this app is refused with 403 and no body")
    func refusals() async throws {
        let responder = try Self.responder([], store: try Self.store([Self.snapshot(.active)]))
        let forger = try TestPKI()
        let payload = RealtimeRequestFixtures.payload(
            .init(originalTransactionId: Self.purchase, productId: Self.product), appAppleId: RealtimeRequestFixtures.defaultAppAppleId,
            environment: "Sandbox", requestIdentifier: UUID(), signedDate: Int64(Date().timeIntervalSince1970 * 1000))
        let bodies: [([UInt8], String)] = [
            (Array("not json".utf8), "malformed_json"),
            (Array("{}".utf8), "missing_signed_payload"),
            (Array(#"{"signedPayload":"a.b"}"#.utf8), "malformed_jws"),
            (Array(#"{"signedPayload":"\#(try forger.signer.sign(payload: payload))"}"#.utf8), "invalid_certificate_chain"),
        ]
        for (body, reason) in bodies {
            let reply = await responder.respond(to: body)
            #expect(reply.status == 403 && reply.body.isEmpty && reply.result == "refused" && reply.reason == reason, "\(reply)")
        }
    }
}

@Suite("retention: repeated log lines held back")
struct RetentionLogThrottleTests {
    @Test("one line per key per interval, saying how many were held back; other keys are not held back by it")
    func throttles() {
        let throttle = RetentionLogThrottle(interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(throttle.admit("default/timeout", now: start) == 0)
        for second in 1...99 {
            #expect(throttle.admit("default/timeout", now: start + .milliseconds(second * 50)) == nil)
        }
        #expect(throttle.admit("refused/invalid_signature", now: start + .seconds(1)) == 0)
        #expect(throttle.admit("default/timeout", now: start + .seconds(10)) == 99)
        #expect(throttle.admit("default/timeout", now: start + .seconds(11)) == nil)
        #expect(throttle.suffix(0).isEmpty && throttle.suffix(99).contains("99 more"))
    }
}

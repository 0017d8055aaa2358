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
import Testing

/// `RetentionResponder` keeps every answer: a request Apple sends again gets the same body
/// (a signed offer included), frequency caps count the answers, defaults are kept with why.
@Suite("retention: answers kept, replayed, capped")
struct RetentionRecordTests {
    typealias R = RetentionResponderTests

    /// A request with `identifier` as Apple spells it (Foundation's upper case).
    static func request(_ identifier: UUID, product: String = R.product) throws -> [UInt8] {
        let payload = RealtimeRequestFixtures.payload(
            .init(originalTransactionId: R.purchase, productId: product), appAppleId: RealtimeRequestFixtures.defaultAppAppleId,
            environment: "Sandbox", requestIdentifier: identifier, signedDate: WallClock.milliseconds() - 1000, locale: "en-US")
        return Array(#"{"signedPayload":"\#(try R.pki.signer.sign(payload: payload))"}"#.utf8)
    }

    /// The kept answer to `identifier`, once the responder wrote it (after its reply).
    static func kept(_ identifier: UUID, in store: any StateStore) async throws -> RetentionOfferRecord {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let record = try store.roles.store.retentionOffer(requestIdentifier: identifier.uuidString.lowercased()) { return record }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw StateStoreError("no answer kept for \(identifier)")
    }

    @Test("a request Apple sends again is answered the same body, a signed offer byte for byte, and kept once")
    func replay() async throws {
        let signer = OfferSigner(credentials: try AppStoreAPICredentials(
            keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: "com.example.signet",
            privateKey: try ECPrivateKey(generating: .p256)))
        let rule = RetentionRule(name: "offer", answer: .promotionalOffer(messageIdentifier: R.message, offerIdentifier: "stay.50", productId: nil))
        let store = try R.store([R.snapshot(.billingRetry)])
        let responder = try R.responder([rule], store: store, signer: signer)
        let identifier = UUID()
        let first = await responder.respond(to: try Self.request(identifier))
        #expect(first.result == "answered" && first.reason == "offer", "\(first)")
        let record = try await Self.kept(identifier, in: store)
        #expect(record.requestIdentifier == identifier.uuidString.lowercased())
        #expect(record.originalTransactionId == R.purchase && record.productId == R.product && record.environment == "Sandbox")
        #expect(record.result == "answered" && record.rule == "offer" && record.kind == "promotional_offer")
        #expect(Array(record.response.utf8) == first.body)

        // Signed again (a new JWS of the same request), as a retry would be: the same answer.
        let again = await responder.respond(to: try Self.request(identifier))
        #expect(again.status == 200 && again.result == "replayed" && again.reason == "answered", "\(again)")
        #expect(again.body == first.body)
        // A different request from the same customer is decided anew (a new nonce, a new signature).
        let other = await responder.respond(to: try Self.request(UUID()))
        #expect(other.result == "answered" && other.body != first.body)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try store.retentionOffers(answeredSince: 0, limit: 10).count == 2)
    }

    @Test("a request identifier answered for one purchase is never replayed to another: that one is decided on its own")
    func replayOnlyToTheSamePurchase() async throws {
        var other = R.snapshot(.active)
        other.originalTransactionId = "2000000999999999"
        let store = try R.store([R.snapshot(.billingRetry), other])
        let retry = RetentionRule(name: "retry", states: [.billingRetry], answer: .message(messageIdentifier: R.message))
        let responder = try R.responder([retry], store: store)
        let identifier = UUID()
        #expect(await responder.respond(to: try Self.request(identifier)).reason == "retry")
        _ = try await Self.kept(identifier, in: store)
        let payload = RealtimeRequestFixtures.payload(
            .init(originalTransactionId: other.originalTransactionId, productId: R.product), appAppleId: RealtimeRequestFixtures.defaultAppAppleId,
            environment: "Sandbox", requestIdentifier: identifier, signedDate: WallClock.milliseconds() - 1000, locale: "en-US")
        let body = Array(#"{"signedPayload":"\#(try R.pki.signer.sign(payload: payload))"}"#.utf8)
        let reply = await responder.respond(to: body)
        #expect(reply.result == "default" && reply.reason == "no_rule", "\(reply)")
        // The first answer stands for its request.
        #expect(try store.roles.store.retentionOffer(requestIdentifier: identifier.uuidString.lowercased())?.originalTransactionId == R.purchase)
    }

    @Test("defaults are kept with why, and replayed as defaults")
    func defaults() async throws {
        let store = try R.store([R.snapshot(.active)])
        let rule = RetentionRule(name: "retry-only", states: [.billingRetry], answer: .message(messageIdentifier: R.message))
        let responder = try R.responder([rule], store: store)
        let identifier = UUID()
        let first = await responder.respond(to: try Self.request(identifier))
        #expect(first.result == "default" && first.reason == "no_rule")
        let record = try await Self.kept(identifier, in: store)
        #expect(record.result == "default" && record.reason == "no_rule" && record.rule == nil && record.kind == "message")
        // The purchase moved to billing retry meanwhile: the repeated request still gets what was answered.
        try store.withTransaction { try $0.save(R.snapshot(.billingRetry)) }
        let again = await responder.respond(to: try Self.request(identifier))
        #expect(again.result == "replayed" && again.reason == "default" && again.body == first.body, "\(again)")
    }

    @Test("tenure: whole months since the renewal info's recentSubscriptionStartDate, between the bounds; unknown never matches")
    func tenure() async throws {
        let now = WallClock.milliseconds()
        let day: Int64 = 86_400_000
        func answered(startedDaysAgo days: Int64?, _ bounds: RetentionTenure) async throws -> Bool {
            var snapshot = R.snapshot(.active)
            snapshot.recentSubscriptionStartDate = days.map { now - $0 * day }
            let rule = RetentionRule(name: "loyal", tenureMonths: bounds, answer: .message(messageIdentifier: R.message))
            return await (try R.responder([rule], store: try R.store([snapshot]))).respond(to: try Self.request(UUID())).reason == "loyal"
        }
        #expect(try await answered(startedDaysAgo: 200, RetentionTenure(min: 6)))
        #expect(try await !answered(startedDaysAgo: 150, RetentionTenure(min: 6)))
        #expect(try await answered(startedDaysAgo: 150, RetentionTenure(max: 6)))
        #expect(try await !answered(startedDaysAgo: 400, RetentionTenure(min: 1, max: 12)))
        #expect(try await answered(startedDaysAgo: 10, RetentionTenure(max: 0)), "within the first month: 0")
        #expect(try await !answered(startedDaysAgo: nil, RetentionTenure(min: 0)), "no start known")
        // Calendar months, not 30-day blocks: 31 Jan to 28 Feb is not yet a month; to 1 Mar is.
        let jan31: Int64 = 1_706_659_200_000  // 2024-01-31T00:00:00Z
        #expect(RetentionTenure.months(from: jan31, to: jan31 + 28 * day) == 0)
        #expect(RetentionTenure.months(from: jan31, to: jan31 + 30 * day) == 1)
        #expect(RetentionTenure.months(from: jan31, to: jan31 + 366 * day) == 12)
        #expect(RetentionTenure.months(from: jan31, to: jan31 - day) == 0)
    }

    @Test("answers older than keep_answers are deleted after a batch, at most once an hour; a frequency cap longer than keep_answers is refused")
    func pruning() async throws {
        let store = try R.store([R.snapshot(.active)])
        let day: Int64 = 86_400_000
        let now = WallClock.milliseconds()
        for (id, age) in [("ancient", 500 * day), ("old", 401 * day), ("recent", 10 * day)] as [(String, Int64)] {
            _ = try store.roles.store.recordRetentionOffer(RetentionOfferRecord(
                requestIdentifier: id, originalTransactionId: R.purchase, environment: "Sandbox", productId: R.product, result: "answered",
                reason: "r", kind: "message", answeredAt: now - age, response: "{}"))
        }
        // The first request's batch prunes (the default keep_answers: 400 days).
        let responder = try R.responder([], store: store)
        let identifier = UUID()
        _ = await responder.respond(to: try Self.request(identifier))
        _ = try await Self.kept(identifier, in: store)
        let deadline = ContinuousClock.now + .seconds(10)
        while try store.roles.store.retentionOffer(requestIdentifier: "old") != nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let left = try store.roles.store.retentionOffers(answeredSince: 0, limit: 10).map(\.requestIdentifier)
        #expect(left == ["recent", identifier.uuidString.lowercased()])

        // Not again within the hour, whatever was added meanwhile.
        let writer = RetentionRecordWriter(capacity: 8, keep: .seconds(86_400), store: { store.roles.store }, failed: { _ in })
        await writer.pruneIfDue(now: now)
        #expect(try store.roles.store.retentionOffers(answeredSince: 0, limit: 10).count == 1)
        _ = try store.roles.store.recordRetentionOffer(RetentionOfferRecord(
            requestIdentifier: "late", originalTransactionId: R.purchase, environment: "Sandbox", productId: R.product, result: "answered",
            reason: "r", kind: "message", answeredAt: now - 2 * day, response: "{}"))
        await writer.pruneIfDue(now: now + 60_000)
        #expect(try store.roles.store.retentionOffer(requestIdentifier: "late") != nil)
        await writer.pruneIfDue(now: now + RetentionRecordWriter.pruneInterval)
        #expect(try store.roles.store.retentionOffer(requestIdentifier: "late") == nil)

        // A cap that counts further back than answers are kept is a configuration error.
        let yaml = """
            default_message: 11111111-1111-4111-8111-111111111111
            keep_answers: 30d
            rules:
              - name: yearly-cap
                message: 22222222-2222-4333-8444-555555555555
                frequency_cap: { max: 1, within: 90d }
            """
        #expect(throws: ConfigError.self) {
            try RetentionPolicy(ComponentSpec.retentionSection.parse(ConfigNode.parse(yaml: yaml, file: "p.yaml", environment: [:])))
        }
        let kept = yaml.replacingOccurrences(of: "keep_answers: 30d", with: "keep_answers: 90d")
        #expect(try RetentionPolicy(ComponentSpec.retentionSection.parse(ConfigNode.parse(yaml: kept, file: "p.yaml", environment: [:]))).keepAnswers == .seconds(90 * 86_400))
    }

    @Test("an answer not committed yet is found by its request (a repeat that beats the commit is replayed), and no longer once committed")
    func uncommittedAnswers() async throws {
        let store = try R.store([])
        // A store slow to take the batch: the commit lands 300 ms after the append.
        let writer = RetentionRecordWriter(
            capacity: 8, keep: .seconds(86_400),
            store: {
                Thread.sleep(forTimeInterval: 0.3)
                return store.roles.store
            }, failed: { _ in })
        let record = RetentionOfferRecord(
            requestIdentifier: "r-1", originalTransactionId: R.purchase, environment: "Sandbox", productId: R.product, result: "answered",
            reason: "r", kind: "message", answeredAt: WallClock.milliseconds(), response: #"{"message":{}}"#)
        #expect(writer.append(record))
        #expect(writer.uncommitted(requestIdentifier: "r-1") == record)
        #expect(try store.roles.store.retentionOffer(requestIdentifier: "r-1") == nil)
        let deadline = ContinuousClock.now + .seconds(10)
        while writer.uncommitted(requestIdentifier: "r-1") != nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(writer.uncommitted(requestIdentifier: "r-1") == nil)
        #expect(try store.roles.store.retentionOffer(requestIdentifier: "r-1") == record)
    }

    @Test("a frequency cap: the rule stops matching the purchase once it answered it max times within the window")
    func frequencyCap() async throws {
        let store = try R.store([R.snapshot(.active)])
        var capped = RetentionRule(name: "capped", answer: .message(messageIdentifier: R.message))
        capped.frequencyCap = RetentionFrequencyCap(max: 2, within: .seconds(3600))
        let fallback = RetentionRule(name: "fallback", answer: .message(messageIdentifier: "22222222-2222-4333-8444-555555555555"))
        let responder = try R.responder([capped, fallback], store: store)
        var reasons: [String] = []
        for _ in 0..<3 {
            let identifier = UUID()
            reasons.append(await responder.respond(to: try Self.request(identifier)).reason)
            _ = try await Self.kept(identifier, in: store)
        }
        #expect(reasons == ["capped", "capped", "fallback"])

        // Across rules: the other rule's answers count too; the default's never do.
        var across = RetentionRule(name: "across", answer: .message(messageIdentifier: R.message))
        across.frequencyCap = RetentionFrequencyCap(max: 3, within: .seconds(3600), acrossRules: true)
        let acrossResponder = try R.responder([across], store: store)
        #expect(await acrossResponder.respond(to: try Self.request(UUID())).reason == "no_rule")
        var narrow = across
        narrow.frequencyCap = RetentionFrequencyCap(max: 3, within: .seconds(3600), acrossRules: false)
        #expect(await (try R.responder([narrow], store: store)).respond(to: try Self.request(UUID())).reason == "across")

        // Outside the window the earlier answers no longer count.
        let fresh = try R.store([R.snapshot(.active)])
        _ = try fresh.roles.store.recordRetentionOffer(RetentionOfferRecord(
            requestIdentifier: "old", originalTransactionId: R.purchase, environment: "Sandbox", productId: R.product, result: "answered",
            reason: "capped", kind: "message", answeredAt: WallClock.milliseconds() - 7_200_000, response: "{}"))
        var once = capped
        once.frequencyCap = RetentionFrequencyCap(max: 1, within: .seconds(3600))
        #expect(await (try R.responder([once], store: fresh)).respond(to: try Self.request(UUID())).reason == "capped")
    }
}

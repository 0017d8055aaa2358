import AppStoreModels
import Foundation
import Logging
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetAppStorePipeline
import SignetCore
import SignetState
import SignetStateTestSupport
import SignetTestSupport
import Testing

/// The responder against the fake App Store Server API, which judges every body as Apple
/// documents (FakeConsumptionRules): answers only with consent, by policy, once, never late.
@Suite("appstore_consumption: refund questions answered with consent, by policy, once, on time")
struct ConsumptionResponderTests {
    static let hour: Int64 = 3_600_000
    static let quiet = Logger(label: "consumption-test") { _ in SwiftLogNoOpLogHandler() }

    /// One purchase and the refund question about it, as `transition` stores them.
    struct Asked {
        var id: String
        var type: TransactionType
        var token: String? = nil
        var reason = "UNINTENDED_PURCHASE"
        var askedHoursAgo: Int64 = 1
        var advancedCommerce = false
        var product: String { "product.\(id)" }
    }

    static func seed(_ asked: [Asked], in store: any StoreRoles, now: Int64) throws {
        try store.withTransaction { transaction in
            for item in asked {
                var purchase = SubscriptionSnapshot(originalTransactionId: item.id, state: .active, entitled: true, evaluatedAt: now)
                purchase.productType = item.type.rawValue
                purchase.productId = item.product
                purchase.purchaseDate = now - 10 * 24 * hour
                // A non-renewing term of 40 days, a quarter of it used when the customer asked.
                if item.type == .nonRenewingSubscription { purchase.expiresDate = now - 10 * 24 * hour + 40 * 24 * hour }
                try transaction.save(purchase)
                let requestedAt = now - item.askedHoursAgo * hour
                try transaction.save(ConsumptionRequestRecord(
                    transactionId: item.id, originalTransactionId: item.id, productId: item.product, productType: item.type.rawValue,
                    appAccountToken: item.token.flatMap { AppAccountToken($0) }, environment: "Production", reason: item.reason, advancedCommerce: item.advancedCommerce,
                    notificationUUID: "uuid-\(item.id)", requestedAt: requestedAt, receivedAt: requestedAt))
            }
        }
    }

    static func request(_ id: String, in store: any StoreRoles) throws -> ConsumptionRequestRecord? {
        try store.consumptionRequests(requestedSince: 0, limit: 1000).first { $0.transactionId == id }
    }

    static func body(_ request: ConsumptionRequestRecord?) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data((request?.answer ?? "").utf8)) as? [String: Any]) ?? [:]
    }

    /// A fake API started for the test, stopped whatever happens.
    static func withFake(_ body: (APITestBed, FakeAppStoreAPI) async throws -> Void) async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake(.production)
        do {
            try await body(bed, fake)
        } catch {
            await fake.stop()
            throw error
        }
        await fake.stop()
    }

    @Test("every product type, consented, withdrawn and unknown, a late one and an Advanced Commerce one: only consented ones are answered, once, with bodies Apple accepts, by policy", arguments: [StoreKind.memory, .sqlite])
    func policyAndConsent(_ kind: StoreKind) async throws {
        try await Self.withFake { bed, fake in
            let store = try await kind.makeLocation().open()
            defer { try? store.close() }
            let now = WallClock.milliseconds()
            let asked = [
                Asked(id: "consumable", type: .consumable, token: "aaaaaaaa-0000-4000-8000-000000000000"),
                Asked(id: "nonconsumable", type: .nonConsumable, token: "bbbbbbbb-0000-4000-8000-000000000000", reason: "FULFILLMENT_ISSUE"),
                Asked(id: "nonrenewing", type: .nonRenewingSubscription, token: "cccccccc-0000-4000-8000-000000000000"),
                Asked(id: "autorenewable", type: .autoRenewableSubscription, token: "dddddddd-0000-4000-8000-000000000000", reason: "LEGAL"),
                Asked(id: "advanced", type: .autoRenewableSubscription, token: "6f1d2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b", advancedCommerce: true),
                Asked(id: "withdrawn", type: .consumable, token: "eeeeeeee-0000-4000-8000-000000000000"),
                Asked(id: "unknown", type: .consumable, token: "ffffffff-0000-4000-8000-000000000000"),
                Asked(id: "late", type: .consumable, token: "aaaaaaaa-0000-4000-8000-000000000000", askedHoursAgo: 13),
            ]
            try Self.seed(asked, in: store, now: now)
            for item in asked {
                fake.addConsumptionTransaction(
                    item.id, productType: item.type.rawValue, advancedCommerce: item.advancedCommerce,
                    deadline: now - item.askedHoursAgo * Self.hour + ConsumptionRequestRecord.answerWindow,
                    consented: !["withdrawn", "unknown"].contains(item.id))
            }
            // Per customer for most, per purchase for one; the customer's own preference wins.
            for token in ["aaaaaaaa-0000-4000-8000-000000000000", "bbbbbbbb-0000-4000-8000-000000000000", "dddddddd-0000-4000-8000-000000000000", "6f1d2c3b-4a59-4e6f-8a7b-9c0d1e2f3a4b"] {
                try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(try #require(AppAccountToken(token))), consented: true, at: now - 100, by: "test"))
            }
            try store.recordConsumptionConsent(ConsumptionConsent(
                .originalTransactionId("nonrenewing"), consented: true, at: now - 100, by: "test", refundPreference: "GRANT_PRORATED"))
            try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("EEEEEEEE-0000-4000-8000-000000000000")!), consented: true, at: now - 200, by: "test"))
            try store.recordConsumptionConsent(ConsumptionConsent(.originalTransactionId("withdrawn"), consented: false, at: now - 100, by: "test"))

            var options = ConsumptionResponder.Options()
            options.policy.refundPreference = .decline
            let byReason: [String: ConsumptionInformation.RefundPreference?] = ["FULFILLMENT_ISSUE": .grantFull, "LEGAL": nil]
            #expect(byReason.keys.contains("LEGAL"), "an explicit no-preference is kept as a key")
            options.policy.refundPreferenceByReason = byReason
            options.policy.refundPreferenceByProduct = ["product.consumable": .grantProrated]
            let responder = ConsumptionResponder(options: options, store: StateStoreResource(store: store), logger: Self.quiet)
            let client = try bed.client(fake, environment: .production)
            let counts = try await responder.sweep(client: client)
            #expect(counts == .init(answered: 5, skipped: 2, late: 1, failed: 0, retrying: 0), "\(counts)")
            // Nothing is due any more: a second sweep sends nothing.
            _ = try await responder.sweep(client: client)
            try await client.shutdown()

            #expect(fake.rejectedConsumptionBodies.isEmpty, "\(fake.rejectedConsumptionBodies.map { "\($0.transactionId): \($0.refusal)" })")
            #expect(fake.duplicateConsumptionAnswers.isEmpty && fake.lateConsumptionAnswers.isEmpty && fake.consentlessConsumptionAnswers.isEmpty)
            let sent = fake.requests(.consumption).compactMap(\.pathParameter)
            #expect(sent.sorted() == ["autorenewable", "consumable", "nonconsumable", "nonrenewing"], "\(sent)")
            #expect(fake.requests(.consumptionV1).compactMap(\.pathParameter) == ["advanced"])

            let statuses = try Dictionary(uniqueKeysWithValues: asked.map { ($0.id, try #require(try Self.request($0.id, in: store)).status) })
            #expect(statuses == [
                "consumable": .answered, "nonconsumable": .answered, "nonrenewing": .answered, "autorenewable": .answered,
                "advanced": .answered, "withdrawn": .skipped, "unknown": .skipped, "late": .late,
            ], "\(statuses)")
            #expect(try Self.request("unknown", in: store)?.detail?.contains("no consent recorded") == true)
            #expect(try Self.request("withdrawn", in: store)?.detail?.contains("withdrawn") == true)

            // What was sent, by policy: the product's GRANT_PRORATED cannot go with an unknown consumption,
            // so no preference; the reason's GRANT_FULL; the customer's own GRANT_PRORATED with the elapsed
            // quarter of the term; LEGAL's explicit none for the subscription (no percentage, Apple computes it).
            let consumable = try #require(try Self.request("consumable", in: store))
            #expect(Self.body(consumable)["refundPreference"] == nil && consumable.detail?.contains("GRANT_PRORATED") == true)
            #expect(Self.body(consumable)["deliveryStatus"] as? String == "DELIVERED" && Self.body(consumable)["customerConsented"] as? Bool == true)
            #expect(Self.body(try Self.request("nonconsumable", in: store))["refundPreference"] as? String == "GRANT_FULL")
            let nonRenewing = Self.body(try Self.request("nonrenewing", in: store))
            #expect(nonRenewing["refundPreference"] as? String == "GRANT_PRORATED", "\(nonRenewing)")
            let share = try #require(nonRenewing["consumptionPercentage"] as? Int)
            #expect((24_000...26_000).contains(share), "a quarter of the term: \(share)")
            let subscription = Self.body(try Self.request("autorenewable", in: store))
            #expect(subscription["consumptionPercentage"] == nil && subscription["refundPreference"] == nil, "\(subscription)")
            let answered = try #require(try Self.request("autorenewable", in: store))
            #expect(answered.answeredAt != nil && answered.dueAt == nil && answered.attempts == 1)
            // The sent bodies are the recorded ones.
            for request in fake.requests(.consumption) {
                let recorded = try #require(try Self.request(request.pathParameter ?? "", in: store)?.answer)
                let wire = try JSONSerialization.jsonObject(with: Data(request.body))
                let canonical = String(decoding: try JSONSerialization.data(withJSONObject: wire, options: [.sortedKeys]), as: UTF8.self)
                #expect(canonical == recorded, "\(request.pathParameter ?? "")")
            }
        }
    }

    @Test("what the app recorded of a purchase's use goes into the answer: its consumption (so GRANT_PRORATED can be asked), its delivery status")
    func theAppsUsage() async throws {
        try await Self.withFake { bed, fake in
            let store = InMemoryStateStore()
            let now = WallClock.milliseconds()
            try Self.seed([Asked(id: "used", type: .consumable, token: "7e570000-0000-4000-8000-000000000000"), Asked(id: "outage", type: .nonConsumable, token: "7e570000-0000-4000-8000-000000000000")], in: store, now: now)
            fake.addConsumptionTransaction("used", productType: TransactionType.consumable.rawValue)
            fake.addConsumptionTransaction("outage", productType: TransactionType.nonConsumable.rawValue)
            try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("7e570000-0000-4000-8000-000000000000")!), consented: true, at: now, by: "test"))
            try store.recordConsumptionUsage(ConsumptionUsage(transactionId: "used", consumptionPercentage: 40_000, at: now, by: "api: app"))
            try store.recordConsumptionUsage(
                ConsumptionUsage(transactionId: "outage", consumptionPercentage: nil, deliveryStatus: "UNDELIVERED_SERVER_OUTAGE", at: now, by: "api: app"))
            var options = ConsumptionResponder.Options()
            options.policy.refundPreference = .grantProrated
            let client = try bed.client(fake, environment: .production)
            let counts = try await ConsumptionResponder(options: options, store: StateStoreResource(store: store), logger: Self.quiet)
                .sweep(client: client)
            try await client.shutdown()
            #expect(counts.answered == 2, "\(counts)")
            let used = Self.body(try Self.request("used", in: store))
            #expect(used["consumptionPercentage"] as? Int == 40_000 && used["refundPreference"] as? String == "GRANT_PRORATED", "\(used)")
            // Undelivered: 0, and GRANT_PRORATED (which needs more than 0) dropped, never refused by Apple.
            let outage = Self.body(try Self.request("outage", in: store))
            #expect(outage["deliveryStatus"] as? String == "UNDELIVERED_SERVER_OUTAGE" && outage["consumptionPercentage"] as? Int == 0, "\(outage)")
            #expect(outage["refundPreference"] == nil)
            #expect(fake.rejectedConsumptionBodies.isEmpty)
        }
    }

    @Test("Apple's 429 pauses the answer until Retry-After, a 5xx is retried; a purchase Apple does not know fails for good, never retried")
    func rateLimitsAndErrors() async throws {
        try await Self.withFake { bed, fake in
            let store = InMemoryStateStore()
            let now = WallClock.milliseconds()
            try Self.seed([Asked(id: "paused", type: .consumable, token: "7e570000-0000-4000-8000-000000000000")], in: store, now: now)
            fake.addConsumptionTransaction("paused", productType: TransactionType.consumable.rawValue)
            try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("7e570000-0000-4000-8000-000000000000")!), consented: true, at: now, by: "test"))
            fake.script([.tooManyRequests(retryAfter: .milliseconds(400)), .error(status: 500, errorCode: nil)], on: .consumption)
            let responder = ConsumptionResponder(options: .init(), store: StateStoreResource(store: store), logger: Self.quiet)
            let client = try bed.client(fake, environment: .production)
            let counts = try await responder.sweep(client: client)
            #expect(counts.answered == 1, "\(counts)")
            #expect(try Self.request("paused", in: store)?.status == .answered)
            let paused = fake.requests(.consumption).filter { $0.pathParameter == "paused" }
            #expect(paused.count == 3, "429, 500, then 202: \(paused.count)")
            if paused.count == 3 { #expect(paused[1].arrivalMilliseconds - paused[0].arrivalMilliseconds >= 350) }

            // Apple answers 4040010: failed for good at the first answer.
            try Self.seed([Asked(id: "unknown-to-apple", type: .consumable, token: "7e570000-0000-4000-8000-000000000000")], in: store, now: now)
            let second = try await responder.sweep(client: client)
            #expect(second.failed == 1, "\(second)")
            let failed = try #require(try Self.request("unknown-to-apple", in: store))
            #expect(failed.status == .failed && failed.dueAt == nil && failed.detail?.contains("4040010") == true, "\(failed.detail ?? "")")
            let unknown = fake.requests(.consumption).filter { $0.pathParameter == "unknown-to-apple" }.count
            #expect(unknown >= 1 && unknown <= 2, "the client's own not-found retry at most: \(unknown)")
            #expect(try await responder.sweep(client: client) == .init())
            try await client.shutdown()
            #expect(fake.requests(.consumption).filter { $0.pathParameter == "unknown-to-apple" }.count == unknown, "never sent again")
            #expect(fake.rejectedConsumptionBodies.isEmpty)
        }
    }

    @Test("after a restart: pending requests are answered, one a dead instance held is taken once its claim expires, one whose deadline passed while down is late and never sent")
    func restart() async throws {
        try await Self.withFake { bed, fake in
            let location = try await StoreKind.sqlite.makeLocation()
            let now = WallClock.milliseconds()
            do {
                let store = try await location.open()
                try Self.seed([
                    Asked(id: "pending", type: .consumable, token: "7e570000-0000-4000-8000-000000000000"), Asked(id: "held", type: .consumable, token: "7e570000-0000-4000-8000-000000000000"),
                    Asked(id: "expired", type: .consumable, token: "7e570000-0000-4000-8000-000000000000", askedHoursAgo: 12),
                ], in: store, now: now)
                // A responder that died mid-answer left "held" claimed for another two minutes.
                try store.withTransaction { transaction in
                    var held = try #require(try transaction.consumptionRequests(transactionId: "held").first)
                    held.dueAt = now + 120_000
                    held.attempts = 1
                    try transaction.save(held)
                }
                try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("7e570000-0000-4000-8000-000000000000")!), consented: true, at: now, by: "test"))
                try store.close()
            }
            for id in ["pending", "held", "expired"] { fake.addConsumptionTransaction(id, productType: TransactionType.consumable.rawValue) }
            let store = try await location.open()
            defer { try? store.close() }
            let client = try bed.client(fake, environment: .production)
            // "expired" was asked 12 hours ago: its deadline is now.
            let first = try await ConsumptionResponder(options: .init(), store: StateStoreResource(store: store), logger: Self.quiet)
                .sweep(client: client)
            #expect(first.answered == 1 && first.late == 1, "\(first)")
            #expect(try Self.request("held", in: store)?.status == .pending)
            // Three minutes later (the claim expired): taken up and answered, once.
            var later = ConsumptionResponder.Options()
            later.clock = { WallClock.milliseconds() + 180_000 }
            let second = try await ConsumptionResponder(options: later, store: StateStoreResource(store: store), logger: Self.quiet)
                .sweep(client: client)
            try await client.shutdown()
            #expect(second.answered == 1, "\(second)")
            #expect(try Self.request("held", in: store).map { ($0.status, $0.attempts) } ?? (.failed, 0) == (.answered, 2))
            #expect(try Self.request("expired", in: store)?.status == .late)
            #expect(fake.requests(.consumption).compactMap(\.pathParameter).sorted() == ["held", "pending"])
        }
    }

    @Test("two instances sweeping one PostgreSQL store at once answer each of 120 requests exactly once", .enabled(if: PostgresServer.unavailableReason == nil))
    func twoInstancesNeverAnswerTwice() async throws {
        try await Self.withFake { bed, fake in
            let location = try await StoreKind.postgres.makeLocation()
            let first = try await location.open(), second = try await location.open()
            defer {
                try? first.close()
                try? second.close()
            }
            let now = WallClock.milliseconds()
            let ids = (0..<120).map { String(format: "c%03d", $0) }
            try Self.seed(ids.map { Asked(id: $0, type: .consumable, token: "7e570000-0000-4000-8000-000000000000") }, in: first, now: now)
            for id in ids { fake.addConsumptionTransaction(id, productType: TransactionType.consumable.rawValue) }
            try first.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("7e570000-0000-4000-8000-000000000000")!), consented: true, at: now, by: "test"))
            var options = ConsumptionResponder.Options()
            options.batchLimit = 7
            let clients = [try bed.client(fake, environment: .production), try bed.client(fake, environment: .production)]
            let responders = [first, second].map { ConsumptionResponder(options: options, store: StateStoreResource(store: $0), logger: Self.quiet) }
            let counts = try await withThrowingTaskGroup(of: ConsumptionResponder.SweepCounts.self) { group in
                for (responder, client) in zip(responders, clients) { group.addTask { try await responder.sweep(client: client) } }
                return try await group.reduce(into: [ConsumptionResponder.SweepCounts]()) { $0.append($1) }
            }
            for client in clients { try await client.shutdown() }
            let sent = fake.requests(.consumption).compactMap(\.pathParameter)
            #expect(sent.count == 120 && Set(sent) == Set(ids), "\(sent.count) answers for \(Set(sent).count) requests")
            #expect(fake.duplicateConsumptionAnswers.isEmpty)
            #expect(counts.map(\.answered).reduce(0, +) == 120, "\(counts)")
            #expect(try first.consumptionRequests(requestedSince: 0, limit: 1000).allSatisfy { $0.status == .answered })
        }
    }

    @Test("the deadline cuts a call still retrying: it is recorded late, not answered")
    func deadlineCutsARetryingCall() async throws {
        try await Self.withFake { bed, fake in
            let store = InMemoryStateStore()
            let now = WallClock.milliseconds()
            try Self.seed([Asked(id: "slow", type: .consumable, token: "7e570000-0000-4000-8000-000000000000")], in: store, now: now)
            // Signed 12 hours ago less 300 ms: the answer has 300 ms; Apple takes two seconds.
            try store.withTransaction { transaction in
                var request = try #require(try transaction.consumptionRequests(transactionId: "slow").first)
                request.deadline = now + 300
                try transaction.save(request)
            }
            fake.addConsumptionTransaction("slow", productType: TransactionType.consumable.rawValue)
            try store.recordConsumptionConsent(ConsumptionConsent(.appAccountToken(AppAccountToken("7e570000-0000-4000-8000-000000000000")!), consented: true, at: now, by: "test"))
            fake.script([.delay(.seconds(2))], on: .consumption)
            let client = try bed.client(fake, environment: .production)
            let counts = try await ConsumptionResponder(options: .init(), store: StateStoreResource(store: store), logger: Self.quiet)
                .sweep(client: client)
            try await client.shutdown()
            #expect(counts.late == 1 && counts.answered == 0, "\(counts)")
            let late = try #require(try Self.request("slow", in: store))
            #expect(late.status == .late && late.answeredAt == nil && late.detail?.contains("deadline") == true, "\(late)")
        }
    }
}

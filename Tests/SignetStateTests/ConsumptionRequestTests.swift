import AppStoreModels
import Foundation
import SignetCore
@testable import SignetJWS
@testable import SignetState
import SignetStateTestSupport
import Testing

/// CONSUMPTION_REQUEST (issue 38): `transition` keeps each refund question with its deadline in
/// the notification's own commit, once however often Apple asks, and links the REFUND,
/// REFUND_DECLINED or REFUND_REVERSED that follows. The consent ledger decides whether one may
/// be answered. Every durable store and the memory store keep the same rules.
@Suite struct ConsumptionRequestTests {
    typealias F = Fixture
    let t0 = Fixture.t0, day = Fixture.day
    let hour: Int64 = 3_600_000

    func bought(_ otid: String, type: TransactionType = .autoRenewableSubscription, at start: Int64) -> VerifiedPayload {
        let transaction = F.transaction(otid: otid, id: otid, type: type, purchase: start, expires: start + 30 * day, signed: start)
        return type == .autoRenewableSubscription
            ? F.notification(.subscribed, .initialBuy, uuid: "buy-\(otid)", signed: start, transaction: transaction,
                             renewal: F.renewal(otid: otid, signed: start))
            : F.notification(.oneTimeCharge, uuid: "buy-\(otid)", signed: start, transaction: transaction)
    }

    func asked(
        _ otid: String, type: TransactionType = .autoRenewableSubscription, uuid: String, at signed: Int64,
        reason: ConsumptionRequestReason = .unintendedPurchase, advancedCommerce: Bool = false
    ) -> VerifiedPayload {
        var transaction = F.transaction(otid: otid, id: otid, type: type, purchase: t0, expires: t0 + 30 * day, signed: signed)
        if advancedCommerce { transaction.advancedCommerceInfo = AdvancedCommerceTransactionInfo(requestReferenceId: "ref-1") }
        return F.notification(.consumptionRequest, uuid: uuid, signed: signed, transaction: transaction, reason: reason)
    }

    func decided(_ type: NotificationType, _ otid: String, uuid: String, at signed: Int64) -> VerifiedPayload {
        let revoked: Int64? = type == .refund ? signed : nil
        let transaction = F.transaction(
            otid: otid, id: otid, purchase: t0, expires: t0 + 30 * day, signed: signed, revoked: revoked)
        return F.notification(type, uuid: uuid, signed: signed, transaction: transaction, renewal: F.renewal(otid: otid, signed: signed))
    }

    func requests(_ store: any StoreRoles) throws -> [ConsumptionRequestRecord] {
        try store.consumptionRequests(requestedSince: 0, limit: 100)
    }

    @Test(arguments: StoreKind.available)
    func aRequestIsKeptPendingWithItsDeadlineInTheNotificationsCommit(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        _ = try await harness.runEach([bought("r1", at: t0)])
        #expect(try requests(store).isEmpty, "\(kind)")

        let before = WallClock.milliseconds()
        let events = try await harness.runEach([asked("r1", uuid: "q-1", at: t0 + 2 * day, reason: .fulfillmentIssue)])
        #expect(events.map(\.type).contains("consumption_requested"), "\(kind): \(events.map(\.type))")
        let kept = try requests(store)
        #expect(kept.count == 1, "\(kind)")
        let request = try #require(kept.first)
        #expect(request.transactionId == "r1" && request.originalTransactionId == "r1", "\(kind)")
        #expect(request.status == .pending && request.attempts == 0 && request.repeats == 0, "\(kind)")
        #expect(request.requestedAt == t0 + 2 * day && request.deadline == t0 + 2 * day + 12 * hour, "\(kind)")
        #expect(request.reason == "FULFILLMENT_ISSUE" && request.productType == "Auto-Renewable Subscription", "\(kind)")
        #expect(request.productId == "pro.monthly" && request.appAccountToken != nil && request.notificationUUID == "q-1", "\(kind)")
        #expect(request.environment == "Production" && !request.advancedCommerce, "\(kind)")
        // Due as soon as it is stored: answers go out within a minute.
        #expect(request.receivedAt >= before && request.dueAt == request.receivedAt, "\(kind)")
        let due = try store.withTransaction { try $0.consumptionRequestsDue(atOrBefore: WallClock.milliseconds(), limit: 10) }
        #expect(due.map(\.transactionId) == ["r1"], "\(kind)")
        #expect(try store.withTransaction { try $0.consumptionRequestsDue(atOrBefore: request.receivedAt - 1, limit: 10) }.isEmpty, "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func aRequestAppleSendsAgainIsTheSameRequestUntilItsDeadline(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let asking = t0 + 2 * day
        _ = try await harness.runEach([bought("r2", at: t0), asked("r2", uuid: "q-1", at: asking)])
        // The same notification again: dedupe drops it.
        let again = try await harness.run([asked("r2", uuid: "q-1", at: asking)])
        #expect(again.dropped == 1, "\(kind)")
        // A new notificationUUID within the 12 hours: counted on the same request, never a second one.
        _ = try await harness.runEach([asked("r2", uuid: "q-2", at: asking + hour), asked("r2", uuid: "q-3", at: asking + 11 * hour)])
        var kept = try requests(store)
        #expect(kept.count == 1 && kept.first?.repeats == 2 && kept.first?.notificationUUID == "q-1", "\(kind): \(kept)")
        // Asked again after the deadline: the customer asked again, a new request.
        _ = try await harness.runEach([asked("r2", uuid: "q-4", at: asking + 13 * hour)])
        kept = try requests(store)
        #expect(kept.map(\.requestedAt) == [asking, asking + 13 * hour], "\(kind)")
        #expect(kept.map(\.status) == [.pending, .pending] && kept.last?.repeats == 0, "\(kind)")
        // A retry of the first one delivered late (signed inside its window) is still the first one.
        _ = try await harness.runEach([asked("r2", uuid: "q-5", at: asking + 2 * hour)])
        kept = try requests(store)
        #expect(kept.count == 2 && kept.first?.repeats == 3, "\(kind): \(kept)")
    }

    @Test(arguments: StoreKind.available)
    func everyProductTypeIsKeptWithWhatTheAnswerDependsOn(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let types: [(String, TransactionType)] = [
            ("c1", .consumable), ("n1", .nonConsumable), ("s1", .nonRenewingSubscription), ("a1", .autoRenewableSubscription),
        ]
        for (otid, type) in types { _ = try await harness.runEach([bought(otid, type: type, at: t0)]) }
        for (otid, type) in types {
            _ = try await harness.runEach([asked(otid, type: type, uuid: "q-\(otid)", at: t0 + day, reason: .unsatisfiedWithPurchase)])
        }
        _ = try await harness.runEach([asked("ac1", uuid: "q-ac1", at: t0 + day, reason: .other, advancedCommerce: true)])
        let kept = Dictionary(uniqueKeysWithValues: try requests(store).map { ($0.transactionId, $0) })
        #expect(kept.count == 5, "\(kind): \(kept.keys.sorted())")
        for (otid, type) in types {
            #expect(kept[otid]?.productType == type.rawValue && kept[otid]?.reason == "UNSATISFIED_WITH_PURCHASE", "\(kind) \(otid)")
        }
        #expect(kept["ac1"]?.advancedCommerce == true && kept["ac1"]?.reason == "OTHER", "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func theRefundDecisionIsLinkedToTheRequestItAnswers(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let harness = StateHarness(store: store)
        let asking = t0 + 2 * day
        _ = try await harness.runEach([
            bought("o1", at: t0), asked("o1", uuid: "q-1", at: asking), bought("o2", at: t0), asked("o2", uuid: "q-2", at: asking),
        ])
        _ = try await harness.runEach([decided(.refund, "o1", uuid: "d-1", at: asking + 3 * hour)])
        _ = try await harness.runEach([decided(.refundDeclined, "o2", uuid: "d-2", at: asking + 4 * hour)])
        var kept = Dictionary(uniqueKeysWithValues: try requests(store).map { ($0.transactionId, $0) })
        #expect(kept["o1"]?.outcome == .refunded && kept["o1"]?.outcomeAt == asking + 3 * hour, "\(kind)")
        #expect(kept["o1"]?.outcomeNotificationUUID == "d-1", "\(kind)")
        #expect(kept["o2"]?.outcome == .declined, "\(kind)")
        // Reversed later: the later decision stands; an older one delivered late changes nothing.
        _ = try await harness.runEach([decided(.refundReversed, "o1", uuid: "d-3", at: asking + 5 * day)])
        _ = try await harness.runEach([decided(.refundDeclined, "o1", uuid: "d-4", at: asking + 4 * hour)])
        kept = Dictionary(uniqueKeysWithValues: try requests(store).map { ($0.transactionId, $0) })
        #expect(kept["o1"]?.outcome == .reversed && kept["o1"]?.outcomeAt == asking + 5 * day, "\(kind)")
        // A refund with no question before it links nothing and keeps nothing.
        _ = try await harness.runEach([bought("o3", at: t0), decided(.refund, "o3", uuid: "d-5", at: asking)])
        #expect(try requests(store).count == 2, "\(kind)")
    }

    @Test(arguments: StoreKind.durable)
    func pendingRequestsSurviveARestart(_ kind: StoreKind) async throws {
        let location = try await kind.makeLocation()
        do {
            let store = try await location.open()
            _ = try await StateHarness(store: store).runEach([bought("p1", at: t0), asked("p1", uuid: "q-1", at: t0 + day)])
            try store.close()
        }
        let reopened = try await location.open()
        defer { try? reopened.close() }
        #expect(try requests(reopened).map(\.status) == [.pending], "\(kind)")
        // And the status the responder writes back is what a later read sees.
        try reopened.withTransaction { transaction in
            var request = try #require(try transaction.consumptionRequests(transactionId: "p1").first)
            request.status = .answered
            request.dueAt = nil
            request.answer = #"{"customerConsented":true}"#
            try transaction.save(request)
        }
        let answered = try #require(try requests(reopened).first)
        #expect(answered.status == .answered && answered.dueAt == nil && answered.answer == #"{"customerConsented":true}"#, "\(kind)")
        #expect(try reopened.withTransaction { try $0.consumptionRequestsDue(atOrBefore: .max, limit: 10) }.isEmpty, "\(kind)")
    }

    @Test(arguments: StoreKind.available)
    func theConsentLedgerKeepsTheNewestEntryPerCustomerAndPurchase(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        let account = ConsumptionConsent.Subject.appAccountToken(AppAccountToken("AC000000-0000-4000-8000-000000000001")!)
        #expect(try store.consumptionConsent(account) == nil, "\(kind)")
        try store.recordConsumptionConsent(ConsumptionConsent(account, consented: true, at: 100, by: "api: app", refundPreference: "DECLINE"))
        // An older call arriving late changes nothing.
        let standing = try store.recordConsumptionConsent(ConsumptionConsent(account, consented: false, at: 50, by: "api: retry"))
        #expect(standing.consented && standing.at == 100, "\(kind)")
        #expect(try store.consumptionConsent(account)?.refundPreference == "DECLINE", "\(kind)")
        // Withdrawn later: replaced, when and by whom kept.
        try store.recordConsumptionConsent(ConsumptionConsent(account, consented: false, at: 200, by: "cli: support"))
        let withdrawn = try #require(try store.consumptionConsent(account))
        #expect(!withdrawn.consented && withdrawn.by == "cli: support" && withdrawn.appAccountToken?.description == "ac000000-0000-4000-8000-000000000001", "\(kind)")
        // Per purchase, apart from the account.
        let purchase = ConsumptionConsent.Subject.originalTransactionId("acct-1")
        #expect(try store.consumptionConsent(purchase) == nil, "\(kind): the subjects are distinct")
        try store.recordConsumptionConsent(ConsumptionConsent(purchase, consented: true, at: 300, by: "api: app"))

        // A request of that purchase and account: the newest entry of the two decides.
        var request = ConsumptionRequestRecord(transactionId: "t", originalTransactionId: "acct-1", appAccountToken: AppAccountToken("ac000000-0000-4000-8000-000000000001"), requestedAt: 0, receivedAt: 0)
        #expect(try store.withTransaction { try $0.consumptionConsent(for: request) }?.consented == true, "\(kind)")
        try store.recordConsumptionConsent(ConsumptionConsent(account, consented: false, at: 400, by: "api: app"))
        #expect(try store.withTransaction { try $0.consumptionConsent(for: request) }?.consented == false, "\(kind)")
        // Unknown customer and purchase: nothing known, no consent.
        request = ConsumptionRequestRecord(transactionId: "u", originalTransactionId: "other", appAccountToken: nil, requestedAt: 0, receivedAt: 0)
        #expect(try store.withTransaction { try $0.consumptionConsent(for: request) } == nil, "\(kind)")
    }

    @Test func theReportCountsStatusesAndAppleDecisionsByThePreferenceSentPerProduct() throws {
        func asked(_ id: String, _ product: String, _ status: ConsumptionRequestRecord.Status, preference: String? = nil,
                   outcome: ConsumptionRequestRecord.Outcome? = nil, at requested: Int64 = 1_000, repeats: Int = 0) -> ConsumptionRequestRecord {
            var request = ConsumptionRequestRecord(transactionId: id, productId: product, requestedAt: requested, receivedAt: requested)
            request.status = status
            request.refundPreference = preference
            request.outcome = outcome
            request.repeats = repeats
            return request
        }
        let now = 1_000 + 13 * hour
        let report = ConsumptionReport([
            asked("1", "coins", .answered, preference: "DECLINE", outcome: .declined, repeats: 2),
            asked("2", "coins", .answered, preference: "DECLINE", outcome: .refunded),
            asked("3", "coins", .answered, outcome: nil),
            asked("4", "pro", .answered, preference: "GRANT_FULL", outcome: .reversed),
            asked("5", "pro", .skipped, outcome: .refunded),
            asked("6", "pro", .late),
            asked("7", "pro", .failed),
            asked("8", "pro", .pending),
            asked("9", "pro", .pending, at: now - hour),
        ], since: 0, asOf: now)
        let total = report.total.statuses
        let figures: [Int] = [total.requests, total.answered, total.skipped, total.late, total.failed, total.pending, total.overdue, total.repeats]
        #expect(figures == [9, 4, 1, 1, 1, 2, 1, 2])
        let coins = try #require(report.products["coins"])
        #expect(coins.outcomesByPreference["DECLINE"] == .init(answered: 2, refunded: 1, declined: 1, reversed: 0, undecided: 0))
        #expect(coins.outcomesByPreference["NONE"] == .init(answered: 1, refunded: 0, declined: 0, reversed: 0, undecided: 1))
        let pro = try #require(report.products["pro"])
        #expect(pro.outcomesByPreference == ["GRANT_FULL": .init(answered: 1, refunded: 0, declined: 0, reversed: 1, undecided: 0)])
        #expect(pro.outcomesUnanswered == .init(answered: 0, refunded: 1, declined: 0, reversed: 0, undecided: 4))
        #expect(report.total.outcomesByPreference["DECLINE"]?.answered == 2 && !report.truncated)
        // Through the store and its JSON: the same figures.
        let store = InMemoryStateStore()
        try store.withTransaction { transaction in try transaction.save(asked("1", "coins", .answered, preference: "DECLINE", outcome: .declined)) }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(StateJSON.consumptionReport(since: 0, in: store, at: now))) as? [String: Any])
        let products = try #require(json["products"] as? [String: Any])
        let decline = ((products["coins"] as? [String: Any])?["outcomesByPreference"] as? [String: Any])?["DECLINE"] as? [String: Any]
        #expect(decline?["declined"] as? Int == 1 && (json["total"] as? [String: Any])?["statuses"] != nil, "\(json)")
    }

    @Test(arguments: StoreKind.available)
    func theAppsWordOnUsageIsKeptPerTransactionTheNewestStanding(_ kind: StoreKind) async throws {
        let store = try await kind.makeLocation().open()
        defer { try? store.close() }
        #expect(try store.consumptionUsage(transactionId: "t1") == nil, "\(kind)")
        try store.recordConsumptionUsage(ConsumptionUsage(transactionId: "t1", consumptionPercentage: 40_000, at: 100, by: "api: app"))
        let older = try store.recordConsumptionUsage(ConsumptionUsage(transactionId: "t1", consumptionPercentage: 90_000, at: 50, by: "api: retry"))
        #expect(older.consumptionPercentage == 40_000, "\(kind): an older record changes nothing")
        try store.recordConsumptionUsage(
            ConsumptionUsage(transactionId: "t1", consumptionPercentage: 0, deliveryStatus: "UNDELIVERED_SERVER_OUTAGE", at: 200, by: "cli: ops"))
        let kept = try #require(try store.consumptionUsage(transactionId: "t1"))
        #expect(kept.deliveryStatus == "UNDELIVERED_SERVER_OUTAGE" && kept.consumptionPercentage == 0 && kept.by == "cli: ops", "\(kind)")
        // The ledger's keys do not collide: a consent for a purchase with the same id is apart.
        try store.recordConsumptionConsent(ConsumptionConsent(.originalTransactionId("t1"), consented: true, at: 1, by: "x"))
        #expect(try store.consumptionUsage(transactionId: "t1") == kept)
        #expect(try store.consumptionConsent(.originalTransactionId("t1"))?.consented == true)
    }

    @Test func usageApplesRulesWouldRefuseIsRefusedWhenRecorded() {
        func problem(_ percentage: Int?, _ status: String?) -> String? {
            ConsumptionUsage(transactionId: "t", consumptionPercentage: percentage, deliveryStatus: status, at: 0, by: "x").problem
        }
        #expect(problem(50_000, nil) == nil && problem(0, "UNDELIVERED_WRONG_ITEM") == nil && problem(nil, "DELIVERED") == nil)
        #expect(problem(100_001, nil)?.contains("0 to 100000") == true)
        #expect(problem(-1, nil) != nil)
        #expect(problem(10, "UNDELIVERED_OTHER")?.contains("must be 0") == true)
        #expect(problem(nil, "LOST")?.contains("deliveryStatus is one of") == true)
        #expect(problem(nil, nil) != nil)
        #expect(ConsumptionUsage(transactionId: "", consumptionPercentage: 1, at: 0, by: "x").problem != nil)
    }

    @Test func atTheSameInstantAWithdrawalWins() {
        let consent = ConsumptionConsent(.appAccountToken(AppAccountToken("a0000000-0000-4000-8000-000000000000")!), consented: true, at: 10, by: "x")
        let withdrawal = ConsumptionConsent(.originalTransactionId("o"), consented: false, at: 10, by: "y")
        #expect(ConsumptionConsent.deciding([consent, withdrawal]) == withdrawal)
        #expect(ConsumptionConsent.deciding([withdrawal, consent]) == withdrawal)
        #expect(ConsumptionConsent.deciding([nil, consent]) == consent)
        #expect(ConsumptionConsent.deciding([nil, nil]) == nil)
    }

    @Test func theDeadlineIsTwelveHoursAfterAppleSignedTheRequestAndNeverOverflows() {
        let request = ConsumptionRequestRecord(transactionId: "t", requestedAt: 1_000, receivedAt: 5_000)
        #expect(request.deadline == 1_000 + 12 * hour)
        #expect(!request.isPastDeadline(at: 1_000 + 12 * hour - 1) && request.isPastDeadline(at: 1_000 + 12 * hour))
        #expect(ConsumptionRequestRecord(transactionId: "t", requestedAt: .max - 5, receivedAt: 0).deadline == .max)
    }
}

import AppStoreModels
import SignetCore
import SignetJWS
import SignetState
import Foundation
import SignetStateTestSupport
import Testing

/// One row of the table in docs/state-machine.md: a history, one notification, and what
/// must follow (state in the store, entitlement, events in order).
struct TableRow: Sendable, CustomTestStringConvertible {
    let combination: NotificationCombination
    /// The row's first column in docs/state-machine.md.
    var label: String
    let otid: String
    let history: [VerifiedPayload]
    let input: VerifiedPayload
    /// nil: no state may exist for `otid` afterwards.
    let state: SubscriptionState?
    let entitled: Bool
    let events: [EntitlementEventType]
    var testDescription: String { label }

    init(
        combination: NotificationCombination, label: String? = nil, otid: String, history: [VerifiedPayload], input: VerifiedPayload,
        state: SubscriptionState?, entitled: Bool, events: [EntitlementEventType]
    ) {
        self.combination = combination
        self.label = label ?? combination.subtype.map { "\(combination.notificationType.rawValue) / \($0.rawValue)" }
            ?? combination.notificationType.rawValue
        self.otid = otid
        self.history = history
        self.input = input
        self.state = state
        self.entitled = entitled
        self.events = events
    }
}

extension Table {
    static let rows: [TableRow] = [
        TableRow(combination: .init(.subscribed, .initialBuy), otid: "1000", history: [], input: subscribed,
                 state: .active, entitled: true, events: [.granted]),
        TableRow(combination: .init(.subscribed, .resubscribe), otid: "1000", history: [subscribed, expiredVoluntary],
                 input: F.notification(.subscribed, .resubscribe, uuid: "rs1", signed: t0 + 40 * day,
                                       transaction: F.transaction(id: "3000", purchase: t0 + 40 * day, expires: t0 + 70 * day, signed: t0 + 40 * day),
                                       renewal: F.renewal(signed: t0 + 40 * day)),
                 state: .active, entitled: true, events: [.granted, .autoRenewEnabled]),
        TableRow(combination: .init(.didChangeRenewalPref, .upgrade), otid: "1000", history: [subscribed],
                 input: upgrade(.didChangeRenewalPref, uuid: "u1"), state: .active, entitled: true, events: [.productChanged]),
        TableRow(combination: .init(.didChangeRenewalPref, .downgrade), otid: "1000", history: [subscribed],
                 input: downgrade, state: .active, entitled: true, events: [.renewalPreferenceChanged]),
        TableRow(combination: .init(.didChangeRenewalPref), label: "DID_CHANGE_RENEWAL_PREF (none: downgrade cancelled)",
                 otid: "1000", history: [subscribed, downgrade],
                 input: F.notification(.didChangeRenewalPref, uuid: "dc1", signed: t0 + 12 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 12 * day),
                                       renewal: F.renewal(signed: t0 + 12 * day)),
                 state: .active, entitled: true, events: [.renewalPreferenceChanged]),
        TableRow(combination: .init(.didChangeRenewalPref), label: "DID_CHANGE_RENEWAL_PREF (none: crossgrade)", otid: "1000", history: [subscribed],
                 input: F.notification(.didChangeRenewalPref, uuid: "cg1", signed: t0 + 10 * day,
                                       transaction: F.transaction(id: "2000", product: "pro.monthly.family", purchase: t0 + 10 * day,
                                                                  expires: t0 + 40 * day, signed: t0 + 10 * day),
                                       renewal: F.renewal(product: "pro.monthly.family", signed: t0 + 10 * day)),
                 state: .active, entitled: true, events: [.productChanged]),
        TableRow(combination: .init(.didChangeRenewalStatus), label: "DID_CHANGE_RENEWAL_STATUS (none)", otid: "1000", history: [subscribed],
                 input: F.notification(.didChangeRenewalStatus, uuid: "drs1", signed: t0 + 4 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 4 * day),
                                       renewal: F.renewal(autoRenew: false, signed: t0 + 4 * day)),
                 state: .active, entitled: true, events: [.autoRenewDisabled]),
        TableRow(combination: .init(.didChangeRenewalStatus, .autoRenewEnabled), otid: "1000", history: [subscribed, disabled],
                 input: F.notification(.didChangeRenewalStatus, .autoRenewEnabled, uuid: "en1", signed: t0 + 6 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 6 * day),
                                       renewal: F.renewal(signed: t0 + 6 * day)),
                 state: .active, entitled: true, events: [.autoRenewEnabled]),
        TableRow(combination: .init(.didChangeRenewalStatus, .autoRenewDisabled), otid: "1000", history: [subscribed],
                 input: disabled, state: .active, entitled: true, events: [.autoRenewDisabled]),
        TableRow(combination: .init(.offerRedeemed, .upgrade), otid: "1000", history: [subscribed],
                 input: upgrade(.offerRedeemed, uuid: "ou1"), state: .active, entitled: true, events: [.productChanged]),
        TableRow(combination: .init(.offerRedeemed, .downgrade), otid: "1000", history: [subscribed],
                 input: F.notification(.offerRedeemed, .downgrade, uuid: "od1", signed: t0 + 10 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day),
                                       renewal: F.renewal(product: "pro.basic", signed: t0 + 10 * day)),
                 state: .active, entitled: true, events: [.renewalPreferenceChanged]),
        TableRow(combination: .init(.offerRedeemed), label: "OFFER_REDEEMED (none: offer for the active subscription)", otid: "1000",
                 history: [subscribed],
                 input: F.notification(.offerRedeemed, uuid: "o1", signed: t0 + 10 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day),
                                       renewal: F.renewal(signed: t0 + 10 * day)),
                 state: .active, entitled: true, events: []),
        TableRow(combination: .init(.didRenew), otid: "1000", history: [subscribed],
                 input: F.notification(.didRenew, uuid: "dr1", signed: t0 + 30 * day,
                                       transaction: F.transaction(id: "2000", purchase: t0 + 30 * day, expires: t0 + 60 * day, signed: t0 + 30 * day),
                                       renewal: F.renewal(signed: t0 + 30 * day)),
                 state: .active, entitled: true, events: [.renewed]),
        TableRow(combination: .init(.didRenew, .billingRecovery), otid: "1000", history: [subscribed, failNoGrace],
                 input: F.notification(.didRenew, .billingRecovery, uuid: "br1", signed: t0 + 33 * day,
                                       transaction: F.transaction(id: "2000", purchase: t0 + 33 * day, expires: t0 + 63 * day, signed: t0 + 33 * day),
                                       renewal: F.renewal(signed: t0 + 33 * day)),
                 state: .active, entitled: true, events: [.recovered]),
        TableRow(combination: .init(.expired, .voluntary), otid: "1000", history: [subscribed, disabled],
                 input: expiredVoluntary, state: .expired, entitled: false, events: [.expired]),
        TableRow(combination: .init(.expired, .billingRetry), otid: "1000", history: [subscribed, failNoGrace],
                 input: expired(.billingRetry, at: t0 + 90 * day), state: .expired, entitled: false, events: [.expired, .autoRenewDisabled]),
        TableRow(combination: .init(.expired, .priceIncrease), otid: "1000", history: [subscribed],
                 input: expired(.priceIncrease, at: t0 + 30 * day + 1), state: .expired, entitled: false, events: [.expired, .autoRenewDisabled]),
        TableRow(combination: .init(.expired, .productNotForSale), otid: "1000", history: [subscribed],
                 input: expired(.productNotForSale, at: t0 + 30 * day + 1), state: .expired, entitled: false, events: [.expired, .autoRenewDisabled]),
        TableRow(combination: .init(.didFailToRenew), label: "DID_FAIL_TO_RENEW (none)", otid: "1000", history: [subscribed],
                 input: failNoGrace, state: .billingRetry, entitled: false, events: [.billingRetryEntered]),
        TableRow(combination: .init(.didFailToRenew, .gracePeriod), otid: "1000", history: [subscribed],
                 input: failGrace, state: .gracePeriod, entitled: true, events: [.gracePeriodEntered]),
        TableRow(combination: .init(.gracePeriodExpired), otid: "1000", history: [subscribed, failGrace],
                 input: F.notification(.gracePeriodExpired, uuid: "ge1", signed: t0 + 36 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 36 * day),
                                       renewal: F.renewal(signed: t0 + 36 * day, billingRetry: true, graceEnds: t0 + 36 * day)),
                 state: .billingRetry, entitled: false, events: [.billingRetryEntered]),
        TableRow(combination: .init(.priceIncrease, .pending), otid: "1000", history: [subscribed],
                 input: unchanged(.priceIncrease, .pending, uuid: "pp1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.priceIncrease, .accepted), otid: "1000", history: [subscribed],
                 input: unchanged(.priceIncrease, .accepted, uuid: "pa1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.refund), otid: "1000", history: [subscribed],
                 input: refund, state: .refunded, entitled: false, events: [.refunded]),
        TableRow(combination: .init(.refundDeclined), otid: "1000", history: [subscribed],
                 input: unchanged(.refundDeclined, nil, uuid: "rd1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.refundReversed), otid: "1000", history: [subscribed, refund],
                 input: F.notification(.refundReversed, uuid: "rr1", signed: t0 + 20 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 20 * day)),
                 state: .active, entitled: true, events: [.restored]),
        TableRow(combination: .init(.refundReversed), label: "REFUND_REVERSED (after the period ended)", otid: "1000", history: [subscribed, refund],
                 input: F.notification(.refundReversed, uuid: "rr2", signed: t0 + 45 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 45 * day)),
                 state: .expired, entitled: false, events: [.expired]),
        TableRow(combination: .init(.consumptionRequest), otid: "c1", history: [consumable],
                 input: F.notification(.consumptionRequest, uuid: "cr1", signed: t0 + 2 * day,
                                       transaction: F.transaction(otid: "c1", id: "c1", product: "coins.100", type: .consumable, purchase: t0, signed: t0 + 2 * day)),
                 state: .consumed, entitled: true, events: [.consumptionRequested]),
        TableRow(combination: .init(.renewalExtended), otid: "1000", history: [subscribed],
                 input: F.notification(.renewalExtended, uuid: "re1", signed: t0 + 10 * day,
                                       transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 37 * day, signed: t0 + 10 * day),
                                       renewal: F.renewal(signed: t0 + 10 * day)),
                 state: .active, entitled: true, events: [.extended]),
        TableRow(combination: .init(.renewalExtension, .summary), otid: "1000", history: [],
                 input: F.notification(.renewalExtension, .summary, uuid: "rx1", signed: t0,
                                       summary: NotificationSummary(requestIdentifier: "req", environment: .production, bundleId: F.bundleId,
                                                                    productId: "pro.monthly", failedCount: 0, succeededCount: 5)),
                 state: nil, entitled: false, events: []),
        TableRow(combination: .init(.renewalExtension, .failure), otid: "1000", history: [subscribed],
                 input: unchanged(.renewalExtension, .failure, uuid: "rxf1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.revoke), otid: "f1", history: [familySubscribed],
                 input: F.notification(.revoke, uuid: "rv1", signed: t0 + 3 * day,
                                       transaction: F.transaction(otid: "f1", id: "f1", purchase: t0, expires: t0 + 30 * day, signed: t0 + 3 * day,
                                                                  ownership: .familyShared, revoked: t0 + 3 * day, revocationType: .familyRevoke)),
                 state: .revoked, entitled: false, events: [.revoked]),
        TableRow(combination: .init(.test), otid: "1000", history: [],
                 input: F.notification(.test, uuid: "t1", signed: t0), state: nil, entitled: false, events: []),
        TableRow(combination: .init(.externalPurchaseToken, .unreported), otid: "1000", history: [],
                 input: F.notification(.externalPurchaseToken, .unreported, uuid: "ep1", signed: t0,
                                       externalToken: ExternalPurchaseToken(externalPurchaseId: "x", bundleId: F.bundleId)),
                 state: nil, entitled: false, events: []),
        TableRow(combination: .init(.externalPurchaseToken, .created), otid: "1000", history: [],
                 input: F.notification(.externalPurchaseToken, .created, uuid: "ep2", signed: t0,
                                       externalToken: ExternalPurchaseToken(externalPurchaseId: "y", bundleId: F.bundleId)),
                 state: nil, entitled: false, events: []),
        TableRow(combination: .init(.externalPurchaseToken, .activeTokenReminder), otid: "1000", history: [],
                 input: F.notification(.externalPurchaseToken, .activeTokenReminder, uuid: "ep3", signed: t0,
                                       externalToken: ExternalPurchaseToken(externalPurchaseId: "z", bundleId: F.bundleId)),
                 state: nil, entitled: false, events: []),
        TableRow(combination: .init(.oneTimeCharge), label: "ONE_TIME_CHARGE (non-consumable)", otid: "nc1", history: [],
                 input: F.notification(.oneTimeCharge, uuid: "otc1", signed: t0,
                                       transaction: F.transaction(otid: "nc1", id: "nc1", product: "lifetime", type: .nonConsumable, purchase: t0, signed: t0)),
                 state: .owned, entitled: true, events: [.granted]),
        TableRow(combination: .init(.oneTimeCharge), label: "ONE_TIME_CHARGE (consumable)", otid: "c1", history: [], input: consumable,
                 state: .consumed, entitled: true, events: [.granted]),
        TableRow(combination: .init(.oneTimeCharge), label: "ONE_TIME_CHARGE (non-renewing)", otid: "nr1", history: [],
                 input: F.notification(.oneTimeCharge, uuid: "otc-nr", signed: t0,
                                       transaction: F.transaction(otid: "nr1", id: "nr1", product: "season.pass", type: .nonRenewingSubscription,
                                                                  purchase: t0, expires: t0 + 90 * day, signed: t0)),
                 state: .active, entitled: true, events: [.granted]),
        TableRow(combination: .init(.metadataUpdate), otid: "1000", history: [subscribed],
                 input: unchanged(.metadataUpdate, nil, uuid: "mu1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.migration), otid: "m1", history: [],
                 input: F.notification(.migration, uuid: "mg1", signed: t0 + day,
                                       transaction: F.transaction(otid: "m1", id: "m1", purchase: t0 + day, expires: t0 + 31 * day, signed: t0 + day),
                                       renewal: F.renewal(otid: "m1", signed: t0 + day)),
                 state: .active, entitled: true, events: [.granted]),
        TableRow(combination: .init(.priceChange), otid: "1000", history: [subscribed],
                 input: unchanged(.priceChange, nil, uuid: "pc1"), state: .active, entitled: true, events: []),
        TableRow(combination: .init(.rescindConsent), otid: "1000", history: [],
                 input: F.rescindConsent("app-rc1", uuid: "rc1", signed: t0), state: nil, entitled: false, events: [.consentRescinded]),
    ]
}

@Suite struct TransitionTableTests {
    /// Apple sends it, though its documentation lists only the two subtypes.
    static let undocumentedButSent: Set<NotificationCombination> = [.init(.didChangeRenewalStatus)]

    @Test func everyDocumentedCombinationHasARow() {
        let covered = Set(Table.rows.map(\.combination))
        for combination in NotificationCombination.documented {
            #expect(covered.contains(combination), "no table row for \(combination)")
        }
        for row in Table.rows {
            #expect(
                NotificationCombination.documented.contains(row.combination) || Self.undocumentedButSent.contains(row.combination),
                "\(row.label) is not a combination Apple sends")
        }
        #expect(Set(Table.rows.map(\.label)).count == Table.rows.count, "labels must be unique")
    }

    /// Rows of the docs' table that other tests cover (rejections, unknown types).
    static let docsRowsTestedElsewhere = ["undocumented type", "documented type without transaction"]

    /// The table in docs/state-machine.md says what the code does: same rows, same resulting
    /// state, entitlement and events.
    @Test func docsTableMatchesTheRows() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/state-machine.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let start = text.range(of: "| notificationType / subtype | prior | resulting state | entitled | events |") else {
            Issue.record("the table is missing from docs/state-machine.md")
            return
        }
        var cellsByLabel: [String: [String]] = [:]
        for line in text[start.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 5 else { continue }
            cellsByLabel[cells[0]] = cells
        }
        for row in Table.rows {
            guard let cells = cellsByLabel[row.label] else {
                Issue.record("docs/state-machine.md has no row '\(row.label)'")
                continue
            }
            let events = row.events.isEmpty ? "—" : row.events.map(\.rawValue).joined(separator: ", ")
            #expect(cells[4] == events, "\(row.label): docs say events '\(cells[4])'")
            if let state = row.state {
                #expect(cells[2].split(separator: " ").first.map(String.init) == state.rawValue, "\(row.label): docs say state '\(cells[2])'")
                #expect(cells[3].contains("yes") == row.entitled, "\(row.label): docs say entitled '\(cells[3])'")
            } else {
                #expect(cells[2].hasPrefix("no "), "\(row.label): docs say state '\(cells[2])'")
            }
        }
        let documented = Set(cellsByLabel.keys).subtracting(Table.rows.map(\.label))
            .filter { label in !Self.docsRowsTestedElsewhere.contains { label.hasPrefix($0) } }
        #expect(documented.isEmpty, "docs rows without a test: \(documented.sorted())")
    }

    @Test(arguments: Table.rows, StoreFactory.all)
    func row(_ row: TableRow, _ factory: StoreFactory) async throws {
        let store = try await factory.make()
        defer { try? store.close() }
        do {
            let harness = StateHarness(store: store)
            _ = try await harness.runEach(row.history)
            let result = try await harness.run([row.input])
            #expect(result.rejected.isEmpty, "\(row.label): rejected \(result.rejected)")
            #expect(result.events.map(\.type) == row.events.map(\.rawValue), "\(row.label) events")
            let snapshot = try store.subscription(originalTransactionId: row.otid)
            if let state = row.state {
                #expect(snapshot?.state == state, "\(row.label) state")
                #expect(snapshot?.entitled == row.entitled, "\(row.label) entitled")
                for event in result.events {
                    #expect(event.state == state.rawValue)
                    #expect(event.entitled == row.entitled)
                    #expect(event.json["notificationType"] as? String == row.combination.notificationType.rawValue)
                    #expect(event.json["subtype"] as? String == row.combination.subtype?.rawValue)
                }
            } else {
                #expect(snapshot == nil, "\(row.label) must not create state")
            }
        }
    }
}

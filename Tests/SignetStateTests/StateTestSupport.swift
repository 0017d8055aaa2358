import AppStoreModels
import Foundation
import SignetCore
@testable import SignetJWS
import SignetState
import SignetTestSupport
import Synchronization
import Testing

/// Builders for verified payloads without crypto, and a harness running the stages.
enum Fixture {
    static let t0: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000
    static let bundleId = "com.example.signet"

    static func ts(_ milliseconds: Int64?) -> AppleTimestamp? {
        milliseconds.map(AppleTimestamp.init(millisecondsSince1970:))
    }

    static func transaction(
        otid: String = "1000", id: String, product: String = "pro.monthly",
        type: TransactionType = .autoRenewableSubscription,
        purchase: Int64, expires: Int64? = nil, signed: Int64,
        ownership: InAppOwnershipType = .purchased, token: String? = "5b0f9a34-1111-4c3e-9a0e-3c1c1f0b9d01",
        revoked: Int64? = nil, revocationType: RevocationType? = nil, environment: AppStoreEnvironment = .production,
        group: String? = nil
    ) -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: otid, transactionId: id, bundleId: bundleId, productId: product, subscriptionGroupIdentifier: group,
            purchaseDate: ts(purchase), originalPurchaseDate: ts(purchase),
            expiresDate: type == .autoRenewableSubscription || type == .nonRenewingSubscription ? ts(expires) : nil,
            quantity: 1, type: type, appAccountToken: token, inAppOwnershipType: ownership, signedDate: ts(signed),
            revocationReason: revoked == nil ? nil : .refundedForOtherReason, revocationDate: ts(revoked),
            environment: environment, revocationType: revocationType)
    }

    static func renewal(
        otid: String = "1000", product: String = "pro.monthly", autoRenew: Bool = true, signed: Int64,
        billingRetry: Bool = false, graceEnds: Int64? = nil, expirationIntent: ExpirationIntent? = nil, renewalDate: Int64? = nil
    ) -> JWSRenewalInfoDecodedPayload {
        JWSRenewalInfoDecodedPayload(
            expirationIntent: expirationIntent, originalTransactionId: otid, autoRenewProductId: product,
            productId: product, autoRenewStatus: autoRenew ? .on : .off, isInBillingRetryPeriod: billingRetry,
            gracePeriodExpiresDate: ts(graceEnds), signedDate: ts(signed), environment: .production, renewalDate: ts(renewalDate))
    }

    static func notification(
        _ type: NotificationType, _ subtype: Subtype? = nil, uuid: String, signed: Int64,
        transaction: JWSTransactionDecodedPayload? = nil, renewal: JWSRenewalInfoDecodedPayload? = nil,
        summary: NotificationSummary? = nil, externalToken: ExternalPurchaseToken? = nil, status: SubscriptionStatus? = nil
    ) -> VerifiedPayload {
        let body = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: uuid, version: "2.0", signedDate: ts(signed),
            data: summary == nil && externalToken == nil
                ? NotificationData(bundleId: bundleId, environment: transaction?.environment ?? .production, signedTransactionInfo: transaction == nil ? nil : "jws",
                                   signedRenewalInfo: renewal == nil ? nil : "jws", status: status)
                : nil,
            summary: summary, externalPurchaseToken: externalToken)
        return .notification(VerifiedNotification(
            payload: body, payloadJSON: [],
            transaction: transaction.map(verified), renewalInfo: renewal.map(verified),
            effectiveDate: Date(timeIntervalSince1970: Double(signed) / 1000), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3))
    }

    /// RESCIND_CONSENT as Apple sends it: `appData` with the app transaction of download `app`, no purchase.
    static func rescindConsent(_ app: String?, uuid: String, signed: Int64) -> VerifiedPayload {
        let body = ResponseBodyV2DecodedPayload(
            notificationType: .rescindConsent, notificationUUID: uuid, version: "2.0", signedDate: ts(signed),
            appData: AppData(appAppleId: 1234, bundleId: bundleId, environment: .production, signedAppTransactionInfo: "jws"))
        let appTransaction = JWSAppTransactionDecodedPayload(
            receiptType: .production, appAppleId: 1234, bundleId: bundleId, appTransactionId: app, signedDate: ts(signed))
        return .notification(VerifiedNotification(
            payload: body, payloadJSON: [], transaction: nil, renewalInfo: nil,
            appTransaction: VerifiedAppTransaction(
                payload: appTransaction, payloadJSON: [], effectiveDate: Date(), signingCertificate: AppleRoots.appleRootCAG3),
            effectiveDate: Date(timeIntervalSince1970: Double(signed) / 1000), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3))
    }

    static func verified(_ payload: JWSTransactionDecodedPayload) -> VerifiedTransaction {
        VerifiedTransaction(
            payload: payload, payloadJSON: [], effectiveDate: Date(), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3)
    }

    static func verified(_ payload: JWSRenewalInfoDecodedPayload) -> VerifiedRenewalInfo {
        VerifiedRenewalInfo(
            payload: payload, payloadJSON: [], effectiveDate: Date(), effectiveDateSource: .signedDate,
            signingCertificate: AppleRoots.appleRootCAG3)
    }

    /// A signed transaction forwarded by the app.
    static func appTransaction(_ payload: JWSTransactionDecodedPayload) -> VerifiedPayload {
        .transaction(verified(payload))
    }

    /// Apple's current status of a purchase (Get All Subscription Statuses), as `signet reconcile` feeds it.
    static func status(
        _ transaction: JWSTransactionDecodedPayload, _ renewal: JWSRenewalInfoDecodedPayload, status: Int? = nil
    ) -> VerifiedPayload {
        .status(VerifiedSubscriptionStatus(transaction: verified(transaction), renewalInfo: verified(renewal), status: status))
    }

    static func record(_ payload: VerifiedPayload, line: Int64) -> Record {
        var record = Record(raw: Array("line \(line)".utf8), position: SourcePosition(stream: "test", offset: line))
        record[VerifiedPayloadPart.self] = payload
        return record
    }

    static func temporaryDatabase() -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-state-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("state.db").path
    }
}

/// A decoded event as published (from the output bytes, not the typed value).
struct PublishedEvent {
    let json: [String: Any]
    let bytes: [UInt8]
    let headers: [String: String]
    var type: String { json["type"] as? String ?? "" }
    var eventId: String { json["eventId"] as? String ?? "" }
    var state: String? { json["state"] as? String }
    var entitled: Bool { json["entitled"] as? Bool ?? false }
}

/// What one batch did.
struct BatchResult {
    var events: [PublishedEvent] = []
    var dropped = 0
    var rejected: [RecordRejection] = []
    var batch: RecordBatch
}

/// A store the behaviour tests run against. Every parameterised test takes each of
/// ``all``: memory, SQLite and a real PostgreSQL (a fresh database per store on the
/// test process's one server, ``PostgresServer/shared``; left out only when the
/// PostgreSQL binaries are not installed, which ``PostgresStoreTests`` reports).
struct StoreFactory: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable () async throws -> any StateStore
    var testDescription: String { name }

    static let memory = StoreFactory(name: "memory") { InMemoryStateStore() }
    static let sqlite = StoreFactory(name: "sqlite") { try SQLiteStateStore(path: Fixture.temporaryDatabase()) }
    static let postgres = StoreFactory(name: "postgres") { try await StoreKind.postgres.makeLocation().open() }
    static let all = [memory, sqlite] + (PostgresServer.unavailableReason == nil ? [postgres] : [])
}

/// A clock the test moves by hand (ms since 1970): no test waits for real periods.
final class TestClock: Sendable {
    private let value: Mutex<Int64>
    init(_ start: Int64) { value = Mutex(start) }
    var now: Int64 {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
    var function: @Sendable () -> Int64 { { [self] in now } }
}

/// `dedupe` + `transition` over one store, driven the way the runner drives them.
final class StateHarness {
    let store: any StateStore
    let dedupe: DedupeStage
    let transition: TransitionStage
    private var line: Int64 = 0
    private let executor = BlockingExecutor(label: "signet.test.state-harness")

    init(
        store: any StateStore, policy: TransitionPolicy = TransitionPolicy(), useDedupe: Bool = true,
        configure: (inout TransitionStage.Options) -> Void = { _ in }
    ) {
        self.store = store
        var options = TransitionStage.Options()
        options.policy = policy
        configure(&options)
        self.dedupe = DedupeStage(store: store)
        self.transition = TransitionStage(store: store, options: options)
        self.useDedupe = useDedupe
    }

    let useDedupe: Bool

    /// Runs one batch through the stages; acknowledges it unless told not to.
    @discardableResult
    func run(_ payloads: [VerifiedPayload], acknowledge: Bool = true) async throws -> BatchResult {
        var batch = RecordBatch(records: payloads.map { payload in
            line += 1
            return Fixture.record(payload, line: line)
        })
        // On a thread of its own, as the runner does: store calls block (a PostgreSQL store
        // retrying through an outage blocks for seconds), which on the cooperative pool would
        // stall the tests running beside this one.
        try await withTaskExecutorPreference(executor) {
            if useDedupe { try await dedupe.process(&batch) }
            try await transition.process(&batch)
            if acknowledge {
                try await transition.acknowledge(batch)
                if useDedupe { try await dedupe.acknowledge(batch) }
            }
        }
        return Self.result(of: batch)
    }

    /// One expiry sweep at `instant`, acknowledged (delivered) unless told not to; its events.
    func sweep(at instant: Int64, acknowledge: Bool = true) async throws -> [PublishedEvent] {
        try await withTaskExecutorPreference(executor) {
            guard let batch = try transition.sweep(at: instant, limit: 1000) else { return [] }
            if acknowledge { try await transition.acknowledge(batch) }
            return Self.result(of: batch).events
        }
    }

    /// Runs each payload as its own batch; returns all events.
    func runEach(_ payloads: [VerifiedPayload]) async throws -> [PublishedEvent] {
        var events: [PublishedEvent] = []
        for payload in payloads { events += try await run([payload]).events }
        return events
    }

    static func result(of batch: RecordBatch) -> BatchResult {
        var result = BatchResult(batch: batch)
        for record in batch.records {
            switch record.status {
            case .active:
                for message in record.outputs {
                    let object = (try? JSONSerialization.jsonObject(with: Data(message.value))) as? [String: Any] ?? [:]
                    var headers: [String: String] = [:]
                    for header in message.headers { headers[header.name] = String(decoding: header.value, as: UTF8.self) }
                    result.events.append(PublishedEvent(json: object, bytes: message.value, headers: headers))
                }
            case .dropped: result.dropped += 1
            case .rejected(let rejection, _): result.rejected.append(rejection)
            }
        }
        return result
    }
}

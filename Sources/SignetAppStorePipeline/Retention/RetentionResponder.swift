import Foundation
public import Logging
public import SignetAppStoreAPI
import SignetCore
public import SignetJWS
public import SignetState
import Synchronization

/// Answers Apple's Get Retention Message requests from Signet's own state: the request body
/// (`{"signedPayload": …}`) is verified as a notification is, the customer's purchase is
/// read from the store, and the policy's first matching rule picks the answer.
///
/// | Reply | When |
/// |---|---|
/// | 200, a `RealtimeResponseBody` | verified: a rule's answer, or the default message (no rule, an unknown purchase, the store slow or failing, an offer that could not be signed) |
/// | 403, no body | not a verified request of this app and environment (forged, another app's, malformed): Apple's rule is not to answer |
///
/// Every answer is kept in the store (`RetentionOfferRecord`, written after the reply, many
/// per transaction): a request Apple sends again is answered the same body, frequency caps count
/// them, and the transition stage records what the customer did next.
///
/// Transport-agnostic: the webhook's listener serves it at the policy's path; an embedder may
/// call ``respond(to:)`` from its own server.
public final class RetentionResponder: Sendable {
    /// One answer: the HTTP status and body to send.
    public struct Reply: Sendable, Equatable {
        /// 200 for an answer, 403 for a refused request.
        public var status: Int
        /// The `RealtimeResponseBody` JSON; empty for a refusal.
        public var body: [UInt8]
        /// What happened, as metrics and logs name it: `answered` (a rule), `default`,
        /// `replayed` (a request answered before, given the same body) or `refused`.
        public var result: String
        /// The rule's name, the default's reason, the refusal's reason code, or for a replay
        /// what the first answer was (`answered`, `default`).
        public var reason: String
    }

    /// What the lookup decided.
    enum Decision: Sendable {
        case rule(RetentionRule, RetentionOfferSignature?)
        case fallback(RetentionDefaultReason)
        /// The request was answered before: the same body again.
        case replay(RetentionOfferRecord)
    }

    public let policy: RetentionPolicy
    private let verifier: AppStoreVerifier
    /// The store, once open (a pipeline's resource opens with the pipeline).
    private let store: @Sendable () throws -> any StateStore
    private let signer: OfferSigner?
    private let logger: Logger
    private let metrics: RetentionMetrics
    /// Refusals and defaults come in floods (a stalled store, a scanner): one line per reason
    /// per 10 s.
    private let logThrottle = RetentionLogThrottle()
    /// Verification is CPU work: one executor per core, off the event loops.
    private let verifying: [BlockingExecutor]
    /// Lookups block on the store: executors of their own, so a stalled store never holds a
    /// verification (or another executor's lookups) behind it.
    private let lookups: [BlockingExecutor]
    private let nextExecutor = Atomic<Int>(0)
    /// Lookup executors: each runs one blocking lookup at a time.
    static let lookupExecutors = 16
    private let pending = Atomic<Int>(0)
    /// Writes the answers, many per transaction, after their replies.
    private let records: RetentionRecordWriter

    /// - Parameters:
    ///   - policy: the rules and the default message.
    ///   - verifier: the pipeline's verifier (its roots, environments, bundle id and app Apple ID).
    ///   - store: where purchases and consent restrictions are read.
    ///   - signer: signs promotional offers; needed when a rule answers one.
    ///   - logger: where refusals and defaults for a slow or failing store are logged.
    public convenience init(policy: RetentionPolicy, verifier: AppStoreVerifier, store: any StateStore, signer: OfferSigner?, logger: Logger) {
        self.init(policy: policy, verifier: verifier, store: { store }, signer: signer, logger: logger)
    }

    /// A responder reading the pipeline's store resource, open or not yet (then the default).
    package convenience init(
        policy: RetentionPolicy, verifier: AppStoreVerifier, resource: StateStoreResource, signer: OfferSigner?, logger: Logger
    ) {
        self.init(policy: policy, verifier: verifier, store: { try resource.store() }, signer: signer, logger: logger)
    }

    private init(
        policy: RetentionPolicy, verifier: AppStoreVerifier, store: @escaping @Sendable () throws -> any StateStore, signer: OfferSigner?,
        logger: Logger
    ) {
        self.policy = policy
        self.verifier = verifier
        self.store = store
        self.signer = signer
        self.logger = logger
        metrics = RetentionMetrics(rules: policy.rules.map(\.name))
        let throttle = logThrottle
        records = RetentionRecordWriter(
            capacity: policy.maxPendingLookups * 16, keep: policy.keepAnswers, store: { try store().roles.store },
            failed: { error in
                if let heldBack = throttle.admit("record_failed") {
                    logger.warning("retention: could not record or prune answers: \(error)\(throttle.suffix(heldBack))")
                }
            },
            pruned: { deleted in
                logger.info("retention: deleted \(deleted) answers older than keep_answers (\(ConfigDuration.format(policy.keepAnswers)))")
            })
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        verifying = (0..<cores).map { BlockingExecutor(label: "signet.retention.verify.\($0)") }
        // As many lookups in flight as a PostgreSQL pool may serve at once (its pool_size is at
        // most 64); an SQLite store reads on up to 8 read-only connections (SQLiteReaderPool).
        lookups = (0..<Self.lookupExecutors).map { BlockingExecutor(label: "signet.retention.lookup.\($0)") }
    }

    /// The reply to one request body.
    public func respond(to body: [UInt8]) async -> Reply {
        let started = ContinuousClock.now
        let reply = await decide(body)
        metrics.record(reply, seconds: (ContinuousClock.now - started).seconds)
        return reply
    }

    private func decide(_ body: [UInt8]) async -> Reply {
        let turn = nextExecutor.wrappingAdd(1, ordering: .relaxed).oldValue
        let verified: VerifiedRealtimeRequest
        do {
            verified = try await verifying[turn % verifying.count].run { [verifier] () throws(RecordRejection) in
                try verifier.verifyRealtimeRequest(try Self.signedPayload(body))
            }
        } catch let rejection as RecordRejection {
            if let heldBack = logThrottle.admit("refused/\(rejection.reason)") {
                logger.info(
                    "retention: request refused\(logThrottle.suffix(heldBack))",
                    metadata: ["reason": "\(rejection.reason)", "detail": "\(rejection.detail)"])
            }
            return Reply(status: 403, body: [], result: "refused", reason: rejection.reason.rawValue)
        } catch {
            return Reply(status: 403, body: [], result: "refused", reason: ReasonCode.malformedJSON.rawValue)
        }
        let executor = lookups[turn % lookups.count]
        let decision = await lookUp(verified, executor: executor)
        let reply: Reply, kind: String
        switch decision {
        case .replay(let record):
            return Reply(status: 200, body: Array(record.response.utf8), result: "replayed", reason: record.result)
        case .rule(let rule, let signature):
            reply = Reply(status: 200, body: rule.answer.responseBody(signature: signature), result: "answered", reason: rule.name)
            kind = rule.answer.kind
        case .fallback(let reason):
            if reason != .noRule && reason != .unknownPurchase, let heldBack = logThrottle.admit("default/\(reason.rawValue)") {
                logger.notice(
                    "retention: answered the default message\(logThrottle.suffix(heldBack))",
                    metadata: ["reason": "\(reason.rawValue)", "request": "\(verified.requestIdentifier)"])
            }
            let answer = RetentionAnswer.message(messageIdentifier: policy.defaultMessage)
            reply = Reply(status: 200, body: answer.responseBody(signature: nil), result: "default", reason: reason.rawValue)
            kind = answer.kind
        }
        keep(reply, kind: kind, of: verified)
        return reply
    }

    /// Queues the answer's record (written after the reply, with others, off its path).
    private func keep(_ reply: Reply, kind: String, of request: VerifiedRealtimeRequest) {
        guard !request.requestIdentifier.isEmpty else { return }
        let record = RetentionOfferRecord(
            requestIdentifier: request.requestIdentifier, originalTransactionId: request.originalTransactionId,
            environment: request.payload.environment?.rawValue ?? "", productId: request.payload.productId ?? "", result: reply.result,
            reason: reply.reason, kind: kind, answeredAt: WallClock.milliseconds(), response: String(decoding: reply.body, as: UTF8.self))
        if !records.append(record), let heldBack = logThrottle.admit("record_dropped") {
            logger.warning("retention: an answer was not recorded: the store is not keeping up\(logThrottle.suffix(heldBack))")
        }
    }

    /// The store lookup and the rules, within `decision_timeout`: past it (or with
    /// `max_pending_lookups` running) the default, at once. A lookup that finishes late is
    /// dropped.
    private func lookUp(_ request: VerifiedRealtimeRequest, executor: BlockingExecutor) async -> Decision {
        guard pending.wrappingAdd(1, ordering: .relaxed).newValue <= policy.maxPendingLookups else {
            pending.wrappingSubtract(1, ordering: .relaxed)
            return .fallback(.overloaded)
        }
        let outcome = OneShot<Decision>()
        Task { [self] in
            let decision: Decision
            do {
                decision = try await executor.run { [self] in try decideNow(request) }
            } catch {
                if let heldBack = logThrottle.admit("store_error") {
                    logger.warning("retention: the store failed the lookup: \(error)\(logThrottle.suffix(heldBack))")
                }
                decision = .fallback(.storeError)
            }
            pending.wrappingSubtract(1, ordering: .relaxed)
            outcome.fulfill(decision)
        }
        let timer = Task { [timeout = policy.decisionTimeout] in
            try? await Task.sleep(for: timeout)
            outcome.fulfill(.fallback(.timeout))
        }
        defer { timer.cancel() }
        return await outcome.wait() ?? .fallback(.timeout)
    }

    /// Reads the purchase and its consent, then applies the rules (blocking: on a lookup executor).
    private func decideNow(_ request: VerifiedRealtimeRequest) throws -> Decision {
        let store = try self.store()
        // Answers are kept in the store's own role (Signet's stores all play it).
        let answers = store.roles.store
        // Replayed only to the purchase it was made for: an identifier reused for another
        // purchase (never Apple's, but never trusted) must not hand it that purchase's offer.
        // This process's answers not committed yet first: Apple's repeat may beat the commit.
        if !request.requestIdentifier.isEmpty,
            let answered = try records.uncommitted(requestIdentifier: request.requestIdentifier)
                ?? answers.retentionOffer(requestIdentifier: request.requestIdentifier),
            answered.originalTransactionId == request.originalTransactionId
        {
            return .replay(answered)
        }
        let payload = request.payload
        let environment = payload.environment?.rawValue ?? ""
        guard let snapshot = try store.subscription(originalTransactionId: request.originalTransactionId),
            snapshot.environment == nil || snapshot.environment == environment
        else { return .fallback(.unknownPurchase) }
        let restricted = try snapshot.appTransactionId.map { try store.consentRestriction(appTransactionId: $0)?.isInForce ?? false } ?? false
        var facts = RetentionFacts(
            request: payload.productId ?? "", locale: payload.userLocale ?? "", environment: environment, snapshot: snapshot,
            consentRestricted: restricted, names: store.entitlementNames, now: WallClock.milliseconds())
        if let window = policy.capWindow {
            facts.shown = try answers.retentionOffers(
                originalTransactionId: request.originalTransactionId, answeredSince: facts.now - window.clampedMilliseconds)
        }
        if policy.readsRefundRequests {
            facts.refundRequested = try !answers.consumptionRequests(originalTransactionId: request.originalTransactionId, limit: 1).isEmpty
        }
        guard let rule = policy.firstMatch(facts) else { return .fallback(.noRule) }
        guard case .promotionalOffer(_, let offerIdentifier, let product) = rule.answer else { return .rule(rule, nil) }
        guard let signer else { return .fallback(.signingFailed) }
        let productId = product ?? facts.productId
        do {
            switch policy.offerSignature {
            case .v2:
                // Apple: the transactionId claim must be the request's originalTransactionId.
                let jws = try signer.promotionalOfferV2(
                    productId: productId, offerIdentifier: offerIdentifier, transactionId: request.originalTransactionId)
                return .rule(rule, .v2(jws))
            case .v1:
                let token = snapshot.appAccountToken
                let signed = try signer.promotionalOfferV1(productId: productId, offerIdentifier: offerIdentifier, appAccountToken: token)
                return .rule(rule, .v1(
                    encodedSignature: signed.signature, productId: productId, nonce: signed.nonce.uuidString.lowercased(),
                    timestamp: signed.timestamp, keyId: signed.keyIdentifier, offerIdentifier: offerIdentifier,
                    appAccountToken: token?.description))
            }
        } catch {
            logger.error("retention: could not sign the offer of rule '\(rule.name)': \(error)")
            return .fallback(.signingFailed)
        }
    }

    private struct Body: Decodable {
        var signedPayload: String?
    }

    /// The body's `signedPayload`; a rejection when the body is not such an object.
    static func signedPayload(_ body: [UInt8]) throws(RecordRejection) -> String {
        let decoded: Body
        do {
            decoded = try JSONDecoder().decode(Body.self, from: Data(body))
        } catch {
            throw RecordRejection(.malformedJSON, "the body is not a JSON object")
        }
        guard let payload = decoded.signedPayload, !payload.isEmpty else {
            throw RecordRejection(.missingSignedPayload, "the body has no signedPayload")
        }
        return payload
    }
}

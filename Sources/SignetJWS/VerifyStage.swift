import AppStoreModels
public import Foundation
public import Logging
public import SignetCore
import SignetOpenSSL

/// The `verify` stage: checks the JWS signature, the x5c chain to the configured roots,
/// Apple's marker OIDs, validity at `signedDate`, the claims, and the nested JWS, then
/// puts the result in ``VerifiedPayloadPart`` and emits the decoded document
/// (Schemas/decoded-notification.schema.json) as the record's output.
///
/// Records spread over `parallelism` threads: verification is pure CPU and the
/// verifier's caches are thread-safe. With a ``VerificationMonitor`` the stage logs its
/// effective settings when it opens, and a misconfiguration (every notification rejected
/// for another app or environment) is logged, counted and turns `/readyz` unready. With a
/// ``RevocationGate`` (`revocation.mode` soft or hard) each batch's chains are then asked
/// about online, after the offline checks passed (docs/verification.md).
public struct VerifyStage: RecordStage, HealthReporting {
    public let name = "verify"
    /// The checks and roots, shared by every worker.
    public let verifier: AppStoreVerifier
    public let parallelism: Int
    /// Whether records get the decoded document as their output. Building it costs a copy of
    /// every payload, so it is false where a later stage replaces every record's outputs
    /// (`transition` publishes events): the loader decides it from the pipeline's stages
    /// (a later stage declaring `StageTrait/replacesOutputs`); a pipeline built in code
    /// passes it to ``init(verifier:parallelism:emitsDocument:logger:monitor:revocation:)``.
    public let emitsDocument: Bool
    /// Watches outcomes for a misconfiguration; nil: no logging, metrics or readiness.
    public let monitor: VerificationMonitor?
    /// The online revocation policy; nil (`revocation.mode: off`): no check, no cost.
    public let revocation: RevocationGate?
    private let logger: Logger?

    /// A verify stage over `verifier`.
    ///
    /// - Parameters:
    ///   - verifier: the checks and roots; one per process, shared by every worker.
    ///   - parallelism: threads verifying at once (default: every core).
    ///   - emitsDocument: pass false when a later stage replaces every record's outputs (a
    ///     `transition` stage publishes events), as the loader does: the document would be
    ///     built for nothing.
    ///   - logger: where ``open()`` says what is checked; nil: silent.
    ///   - monitor: watches outcomes for a misconfiguration.
    ///   - revocation: asks OCSP about the chains that passed the offline checks.
    public init(
        verifier: AppStoreVerifier, parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        emitsDocument: Bool = true, logger: Logger? = nil, monitor: VerificationMonitor? = nil, revocation: RevocationGate? = nil
    ) {
        self.verifier = verifier
        self.parallelism = max(1, parallelism)
        self.emitsDocument = emitsDocument
        self.logger = logger
        self.monitor = monitor
        self.revocation = revocation
    }

    /// Without its document, a record reaches the sinks with no output unless a later stage
    /// replaces the outputs: refused where the pipeline is built rather than publishing nothing.
    public func checkPlacement(_ placement: StagePlacement) throws(PipelineWiringError) {
        guard !emitsDocument, !placement.laterStage(declares: .replacesOutputs) else { return }
        throw PipelineWiringError(
            stage: name, index: placement.index,
            message: "built with emitsDocument: false, but no later stage replaces the outputs (a transition stage does), "
                + "so the sinks would receive nothing; pass emitsDocument: true, or add the stage that publishes")
    }

    /// Says what is checked, so a wrong environment or bundle id shows in the first lines of the log.
    public func open() async throws {
        guard let logger else { return }
        let configuration = verifier.configuration
        let roots = configuration.roots.map { root in
            root.sha256FingerprintHex == AppleRoots.appleRootCAG3SHA256
                ? "Apple Root CA - G3 (built in)" : "\(root.subject) (sha256 \(root.sha256FingerprintHex.prefix(16))…)"
        }
        logger.info(
            "verify: environment \(configuration.environments.isEmpty ? "any" : configuration.environments.map(\.rawValue).sorted().joined(separator: " and ")), bundle id \(configuration.bundleId ?? "any"), app Apple ID \(configuration.appAppleId.map(String.init) ?? "not checked"), roots: \(roots.joined(separator: "; "))\(revocation.map { policy in ", revocation \(policy.policy.mode.rawValue) (OCSP)" } ?? "")")
    }

    /// Verifies every active record (on up to ``parallelism`` threads), checks the verified
    /// chains online under the revocation policy (which may hold the batch, or throw
    /// ``RevocationUnavailable``), then reports the batch's outcomes to the monitor in one call.
    public func process(_ batch: inout RecordBatch) async throws {
        processEachRecord(&batch)
        if let revocation { try await revocation.apply(to: &batch, stage: name) }
        guard let monitor else { return }
        let stageName = name
        var verifiedTypes: [String: Int] = [:]
        var rejections: [(reason: ReasonCode, detail: String)] = []
        var relayedRejections: [ReasonCode] = []
        var signedDateLags: [Double] = []
        let now = Date()
        for record in batch.records {
            switch record.status {
            case .active:
                guard let verified = record[VerifiedPayloadPart.self] else { continue }
                let type: String = switch verified {
                case .notification(let notification): notification.payload.notificationType?.rawValue ?? "unknown"
                case .transaction: "transaction"
                case .renewalInfo: "renewalInfo"
                case .status: "status"
                }
                verifiedTypes[type, default: 0] += 1
                if case .notification(let notification) = verified, notification.effectiveDateSource == .signedDate {
                    signedDateLags.append(now.timeIntervalSince(notification.effectiveDate))
                }
            case .rejected(let rejection, let stage) where stage == stageName:
                // What the app's backend relays (the purchase path) is its users' input, not
                // Apple's delivery: another app's transaction there says nothing about this
                // stage's settings, and must not take the instance out of rotation.
                if record[RequiredEnvelopeKindPart.self] != nil {
                    relayedRejections.append(rejection.reason)
                } else {
                    rejections.append((rejection.reason, rejection.detail))
                }
            default:
                continue
            }
        }
        monitor.observe(
            verifiedTypes: verifiedTypes, rejections: rejections, relayedRejections: relayedRejections, signedDateLags: signedDateLags)
    }

    /// Ends a revocation hold: a held batch stops waiting and the run stops without it.
    public func stopRequested() {
        revocation?.stop()
    }

    public func readiness() async -> HealthCheck {
        monitor?.readiness() ?? .ready("verify")
    }

    /// Verifies the record's envelope (``SignedEnvelopePart``) and puts the result in
    /// ``VerifiedPayloadPart``, or rejects the record with the reason code of the first failed check.
    public func process(record: inout Record) throws(RecordRejection) {
        guard let envelope = record[SignedEnvelopePart.self] else {
            throw RecordRejection(.missingSignedPayload, "no signed envelope on the record: put a 'decode' stage before 'verify'")
        }
        let verified: VerifiedPayload
        switch envelope.kind {
        case .notification: verified = .notification(try verifier.verifyNotification(envelope.jws))
        case .transaction where record[RequiredEnvelopeKindPart.self] == .transaction:
            verified = .transaction(try verifier.verifyRelayedTransaction(envelope.jws))
        case .transaction: verified = .transaction(try verifier.verifyTransaction(envelope.jws))
        case .renewalInfo: verified = .renewalInfo(try verifier.verifyRenewalInfo(envelope.jws))
        case .status:
            verified = .status(
                try verifier.verifyStatus(transaction: envelope.jws, renewalInfo: envelope.renewalJWS ?? "", status: envelope.status))
        }
        record[VerifiedPayloadPart.self] = verified
        // Apple's webhook body, verified: what a `forward` sink passes on to other stacks.
        if case .notification = envelope.kind { record[ForwardablePart.self] = true }
        if emitsDocument { record.outputs = [Self.output(for: verified)] }
    }

    /// The decoded document for a verified payload: a few summary fields for routing and
    /// grepping, then the verified payload JSON exactly as Apple signed it.
    public static func output(for verified: VerifiedPayload) -> OutputMessage {
        var json = JSONText(reserving: 4096)
        json.beginObject()
        let originalTransactionId = verified.transaction?.payload.originalTransactionId
            ?? verified.renewalInfo?.payload.originalTransactionId
        switch verified {
        case .notification(let notification):
            let payload = notification.payload
            json.key("kind"); json.string("notification")
            json.field("notificationType", payload.notificationType?.rawValue)
            json.field("subtype", payload.subtype?.rawValue)
            json.field("notificationUUID", payload.notificationUUID)
            json.field("environment", payload.effectiveEnvironment?.rawValue)
            json.field("bundleId", payload.effectiveBundleId)
            json.field("signedDate", payload.signedDate?.millisecondsSince1970)
            json.field("originalTransactionId", originalTransactionId)
            json.key("payload"); json.raw(notification.payloadJSON)
            if let transaction = notification.transaction {
                json.key("transactionInfo"); json.raw(transaction.payloadJSON)
            }
            if let renewalInfo = notification.renewalInfo {
                json.key("renewalInfo"); json.raw(renewalInfo.payloadJSON)
            }
        case .transaction(let transaction):
            json.key("kind"); json.string("transaction")
            json.field("environment", transaction.payload.environment?.rawValue)
            json.field("bundleId", transaction.payload.bundleId)
            json.field("signedDate", transaction.payload.signedDate?.millisecondsSince1970)
            json.field("originalTransactionId", originalTransactionId)
            json.field("transactionId", transaction.payload.transactionId)
            json.key("transactionInfo"); json.raw(transaction.payloadJSON)
        case .renewalInfo(let renewalInfo):
            json.key("kind"); json.string("renewalInfo")
            json.field("environment", renewalInfo.payload.environment?.rawValue)
            json.field("signedDate", renewalInfo.payload.signedDate?.millisecondsSince1970)
            json.field("originalTransactionId", originalTransactionId)
            json.key("renewalInfo"); json.raw(renewalInfo.payloadJSON)
        case .status(let status):
            json.key("kind"); json.string("status")
            json.field("environment", status.transaction.payload.environment?.rawValue)
            json.field("bundleId", status.transaction.payload.bundleId)
            json.field("signedDate", status.transaction.payload.signedDate?.millisecondsSince1970)
            json.field("originalTransactionId", originalTransactionId)
            json.field("transactionId", status.transaction.payload.transactionId)
            json.field("status", status.status)
            json.key("transactionInfo"); json.raw(status.transaction.payloadJSON)
            json.key("renewalInfo"); json.raw(status.renewalInfo.payloadJSON)
        }
        json.endObject()
        return OutputMessage(key: originalTransactionId.map { Array($0.utf8) }, value: json.bytes)
    }
}

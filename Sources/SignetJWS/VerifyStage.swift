import AppStoreModels
import Foundation
import SignetCore

/// The `verify` stage: checks the JWS signature, the x5c chain to the configured roots,
/// Apple's marker OIDs, validity at `signedDate`, the claims, and the nested JWS, then
/// puts the result in ``VerifiedPayloadKey`` and emits the decoded document
/// (Schemas/decoded-notification.schema.json) as the record's output.
///
/// Records spread over `parallelism` threads: verification is pure CPU and the
/// verifier's caches are thread-safe.
public struct VerifyStage: RecordStage {
    public let name = "verify"
    public let verifier: AppStoreVerifier
    public let parallelism: Int
    /// Whether records get the decoded document as their output; false in a pipeline where
    /// `transition` replaces it with events (``discardingOutputs()``), since building it
    /// costs a copy of every payload.
    public let emitsDocument: Bool

    public init(
        verifier: AppStoreVerifier, parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        emitsDocument: Bool = true
    ) {
        self.verifier = verifier
        self.parallelism = max(1, parallelism)
        self.emitsDocument = emitsDocument
    }

    public func discardingOutputs() -> any Stage {
        VerifyStage(verifier: verifier, parallelism: parallelism, emitsDocument: false)
    }

    public func process(record: inout Record) throws(RecordRejection) {
        guard let envelope = record[SignedEnvelopeKey.self] else {
            throw RecordRejection(.missingSignedPayload, "no signed envelope on the record: put a 'decode' stage before 'verify'")
        }
        let verified: VerifiedPayload
        switch envelope.kind {
        case .notification: verified = .notification(try verifier.verifyNotification(envelope.jws))
        case .transaction: verified = .transaction(try verifier.verifyTransaction(envelope.jws))
        case .renewalInfo: verified = .renewalInfo(try verifier.verifyRenewalInfo(envelope.jws))
        }
        record[VerifiedPayloadKey.self] = verified
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
        }
        json.endObject()
        return OutputMessage(key: originalTransactionId.map { Array($0.utf8) }, value: json.bytes)
    }
}

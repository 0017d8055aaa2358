import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetState
import Synchronization

/// What one fuzz input does, chosen by its first byte (modulo the number of modes); the
/// rest of the input is the data.
///
/// - `line`: the data is an input line: `decode` (envelope), then `verify` against the
///   test root and against Apple's roots — the unauthenticated path anyone can reach.
/// - `json`: the data is payload JSON, given to every model decoder and the envelope parser.
/// - `signed*`: the data becomes the payload of a JWS signed by the test PKI, which the
///   verifier trusts, so mutated payloads reach the claims checks, date arithmetic, the
///   decoded-output rendering and the subscription state machine. The transaction and
///   renewal modes nest the data in a valid notification; the standalone modes send it as
///   `{"signedTransactionInfo": …}` / `{"signedRenewalInfo": …}`.
///
/// A trap anywhere ends the process and libFuzzer saves the input: that is the finding.
final class FuzzHarness: Sendable {
    enum Mode: UInt8, CaseIterable {
        case line, json, signedNotification, signedTransaction, signedRenewal, standaloneTransaction, standaloneRenewal
    }

    static let shared: FuzzHarness = {
        do { return try FuzzHarness() } catch { fatalError("fuzz harness setup: \(error)") }
    }()

    let signer: JWSSigner
    let corpus: ExtremeNumberCorpus
    let testRootVerifier: AppStoreVerifier
    let appleVerifier: AppStoreVerifier
    let policy = TransitionPolicy()
    /// The last snapshot per purchase, so later inputs run transitions from a real state.
    /// libFuzzer calls from one thread; the mutex makes that not matter.
    private let snapshots = Mutex<[String: SubscriptionSnapshot]>([:])

    init() throws {
        let pki = try TestPKI()
        // A fixed clock: the corpus payloads are signed at `now`, the verifier looks a minute later.
        let now: Int64 = 1_767_225_600_000
        signer = pki.signer
        corpus = ExtremeNumberCorpus(now: now)
        let clock = { @Sendable in Date(timeIntervalSince1970: Double(now + 60_000) / 1000) }
        testRootVerifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [pki.root], environment: .sandbox, bundleId: corpus.bundleId, appAppleId: corpus.appAppleId, now: clock))
        appleVerifier = try AppStoreVerifier(configuration: VerifierConfiguration(now: clock))
    }

    func run(_ input: [UInt8]) {
        guard let first = input.first, let mode = Mode(rawValue: first % UInt8(Mode.allCases.count)) else { return }
        let data = Array(input.dropFirst())
        switch mode {
        case .line:
            verify(line: data, with: testRootVerifier)
            verify(line: data, with: appleVerifier)
        case .json:
            _ = try? AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: data)
            _ = try? AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: data)
            _ = try? AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: data)
            _ = try? DecodeStage.envelope(from: data)
        case .signedNotification: signed(.notification, .notification, data)
        case .signedTransaction: signed(.transaction, .nested, data)
        case .signedRenewal: signed(.renewalInfo, .nested, data)
        case .standaloneTransaction: signed(.transaction, .standalone, data)
        case .standaloneRenewal: signed(.renewalInfo, .standalone, data)
        }
    }

    private func signed(_ kind: ExtremeNumberCorpus.Kind, _ form: ExtremeNumberCorpus.Form, _ payload: [UInt8]) {
        guard let line = try? corpus.signedLine(kind: kind, form: form, payload: payload, serial: 1, signer: signer) else { return }
        verify(line: line, with: testRootVerifier)
    }

    /// decode → verify → the decoded output → the state machine, as the pipeline runs them.
    private func verify(line: [UInt8], with verifier: AppStoreVerifier) {
        var record = Record(raw: line, position: SourcePosition(stream: "fuzz", offset: 0))
        do {
            try DecodeStage().process(record: &record)
            try VerifyStage(verifier: verifier, parallelism: 1).process(record: &record)
        } catch {
            return
        }
        guard let payload = record[VerifiedPayloadPart.self] else { return }
        transition(TransitionInput(payload))
    }

    private func transition(_ input: TransitionInput) {
        let key = input.originalTransactionId ?? ""
        let previous = snapshots.withLock { $0[key] }
        guard case .applied(let snapshot, _) = SubscriptionStateMachine.apply(input, to: previous, policy: policy),
            let snapshot
        else { return }
        // Time passing: every boundary the snapshot names, as the expiry sweep would cross them.
        _ = SubscriptionStateMachine.advance(snapshot, through: Int64.max, policy: policy)
        snapshots.withLock { states in
            if states.count > 10_000 { states.removeAll() }
            states[key] = snapshot
        }
    }
}

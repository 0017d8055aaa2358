import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetState
import SignetTestSupport
import Testing

/// Issue 12: an extreme number in any numeric field of any payload kind, signed by anyone,
/// is accepted or rejected with a known reason code by decode → verify → dedupe →
/// transition, and never traps (a trap would end this test process).
@Suite("Extreme numbers through decode, verify and transition", .timeLimit(.minutes(10)))
struct ExtremeNumberPipelineTests {
    static let bundleId = "com.example.signet"
    /// The corpus is signed "now" (the test PKI is valid around the real clock); the
    /// verifier's clock is a fixed minute later.
    static let now = Int64(Date().timeIntervalSince1970) * 1000

    static let trusted: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()
    /// A look-alike PKI nobody trusts: the attacker's own keys.
    static let attacker: TestPKI = {
        do { return try TestPKI(name: "Attacker") } catch { fatalError("TestPKI: \(error)") }
    }()

    /// What happened to each line.
    struct Outcome {
        let line: ExtremeNumberCorpus.Line
        let status: Record.Status
    }

    static func run(_ lines: [ExtremeNumberCorpus.Line]) async throws -> [Outcome] {
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [trusted.root], environment: .sandbox, bundleId: bundleId, appAppleId: 4242,
            now: { Date(timeIntervalSince1970: Double(now + 60_000) / 1000) }))
        let store = InMemoryStateStore()
        let stages: [any Stage] = [
            DecodeStage(), VerifyStage(verifier: verifier, parallelism: 1), DedupeStage(store: store),
            TransitionStage(store: store),
        ]
        var outcomes: [Outcome] = []
        var offset: Int64 = 0
        for start in stride(from: 0, to: lines.count, by: 256) {
            let chunk = lines[start..<min(start + 256, lines.count)]
            var batch = RecordBatch(records: chunk.map { line in
                offset += 1
                return Record(raw: line.bytes, position: SourcePosition(stream: "corpus", offset: offset))
            })
            for stage in stages { try await stage.process(&batch) }
            for stage in stages { try await stage.acknowledge(batch) }
            outcomes += zip(chunk, batch.records).map { Outcome(line: $0, status: $1.status) }
        }
        return outcomes
    }

    @Test("trusted signer: every line accepted or rejected with a known reason; the bases and some extremes get through")
    func trustedSigner() async throws {
        let corpus = ExtremeNumberCorpus(bundleId: Self.bundleId, now: Self.now)
        let lines = try corpus.lines(signedBy: Self.trusted.signer)
        let outcomes = try await Self.run(lines)
        #expect(outcomes.count == lines.count)
        var accepted = 0
        var reasons: [String: Int] = [:]
        for outcome in outcomes {
            switch outcome.status {
            case .active, .dropped:
                accepted += 1
            case .rejected(let rejection, _):
                reasons[rejection.reason.rawValue, default: 0] += 1
                #expect(KnownReasonCodes.all.contains(rejection.reason.rawValue), "\(outcome.line): \(rejection.reason)")
            }
            // The unchanged base lines must pass, or the extremes would be rejected before the
            // code that uses them ever ran.
            if outcome.line.value == nil {
                #expect(outcome.status == .active, "base line \(outcome.line) was not accepted: \(outcome.status)")
            }
        }
        // Values that are fine for a field (0, 1E+2, 1.5 in a timestamp...) go all the way.
        #expect(accepted > outcomes.count / 10, "accepted \(accepted) of \(outcomes.count); rejections \(reasons)")
        // Out-of-range dates are refused by the claims checks, not by chance elsewhere.
        #expect(reasons["signed_date_in_future", default: 0] + reasons["certificate_not_valid_at_signed_date", default: 0] > 0, "\(reasons)")
    }

    @Test("attacker's own PKI: every line rejected at verify with a known reason, never accepted")
    func untrustedSigner() async throws {
        let corpus = ExtremeNumberCorpus(bundleId: Self.bundleId, now: Self.now)
        let outcomes = try await Self.run(try corpus.lines(signedBy: Self.attacker.signer))
        for outcome in outcomes {
            guard case .rejected(let rejection, let stage) = outcome.status else {
                Issue.record("untrusted line not rejected: \(outcome.line) → \(outcome.status)")
                continue
            }
            #expect(stage == "verify", "\(outcome.line)")
            #expect(KnownReasonCodes.all.contains(rejection.reason.rawValue), "\(outcome.line): \(rejection.reason)")
        }
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Holds the documented check order to the code: for an input that fails several checks,
/// the reason code is the one of the step that comes first in
/// ``AppStoreVerifier/verificationOrder`` (within a step, first in its `reasons`), and
/// docs/verification.md states that same order and those same codes.
@Suite("Verification order")
struct VerificationOrderTests {
    static let now = Fixture.fixedNow
    static let signedDate = Int64(now.timeIntervalSince1970 * 1000) - 3_600_000
    static let bundleId = "com.example.signet"

    static let pki: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()
    static let otherPKI: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()

    /// What a forged input is made of; each fault changes one or more of its parts.
    struct Forge {
        enum Part: Hashable { case alg, crit, x5c, signatureBytes, payloadShape, signedDate, bundleId, environment }

        var signer = VerificationOrderTests.pki.signer
        var bundleId = VerificationOrderTests.bundleId
        var environment = "Sandbox"
        var signedDate = VerificationOrderTests.signedDate
        var productId = #""pro.monthly""#

        var transactionJSON: String {
            #"{"transactionId":"2000000001","originalTransactionId":"2000000000","bundleId":"\#(bundleId)","productId":\#(productId),"environment":"\#(environment)","signedDate":\#(signedDate),"type":"Auto-Renewable Subscription","purchaseDate":\#(signedDate - 1000)}"#
        }

        func jws() throws -> String { try signer.sign(json: transactionJSON) }
    }

    /// One thing wrong with an input: the step that catches it and the code it produces alone.
    struct Fault: Sendable, CustomTestStringConvertible {
        let name: String
        let step: VerificationStep
        let reason: ReasonCode
        let parts: Set<Forge.Part>
        /// Replaces the signing chain; applied before faults that only adjust the signer.
        let replacesChain: Bool
        let apply: @Sendable (inout Forge) throws -> Void
        var testDescription: String { name }

        init(
            _ name: String, _ step: VerificationStep, _ reason: ReasonCode, parts: Set<Forge.Part>, replacesChain: Bool = false,
            _ apply: @escaping @Sendable (inout Forge) throws -> Void
        ) {
            (self.name, self.step, self.reason, self.parts, self.replacesChain, self.apply) = (name, step, reason, parts, replacesChain, apply)
        }
    }

    static let faults: [Fault] = [
        Fault("alg HS256", .compactJWS, .unsupportedAlgorithm, parts: [.alg]) { $0.signer.alg = "HS256" },
        Fault("crit header", .compactJWS, .unsupportedHeader, parts: [.crit]) { $0.signer.extraHeaderMembers = [#""crit":["exp"]"#] },
        Fault("x5c not certificates", .compactJWS, .invalidX5C, parts: [.x5c]) { $0.signer.x5cStrings = ["AAAA", "AAAA", "AAAA"] },
        Fault("signature bit flipped", .signature, .invalidSignature, parts: [.signatureBytes]) {
            $0.signer.transformSignature = { signature in
                var flipped = signature
                if let last = flipped.indices.last { flipped[last] ^= 0x01 }
                return flipped
            }
        },
        Fault("productId a number", .payload, .malformedPayload, parts: [.payloadShape]) { $0.productId = "42" },
        Fault("signedDate a day ahead", .validationInstant, .signedDateInFuture, parts: [.signedDate]) {
            $0.signedDate = Int64(VerificationOrderTests.now.timeIntervalSince1970 * 1000) + 86_400_000
        },
        Fault("chain to an unconfigured root", .appleChain, .invalidCertificateChain, parts: [.x5c], replacesChain: true) {
            $0.signer = VerificationOrderTests.otherPKI.signer
        },
        Fault("leaf expired", .appleChain, .certificateNotValidAtSignedDate, parts: [.x5c], replacesChain: true) { forge in
            let key = try ECPrivateKey(generating: .p256)
            let expired = try VerificationOrderTests.pki.issueLeaf(
                key: key, notBefore: TestPKI.defaultNotBefore, notAfter: Date(timeIntervalSince1970: 1_600_000_000), serialNumber: 0x3001)
            forge.signer.key = key
            forge.signer.chain = [expired, VerificationOrderTests.pki.intermediate, VerificationOrderTests.pki.root]
        },
        Fault("leaf without Apple OID", .appleChain, .missingAppleOID, parts: [.x5c], replacesChain: true) { forge in
            let key = try ECPrivateKey(generating: .p256)
            let plain = try VerificationOrderTests.pki.issueLeaf(key: key, includeMarkerOID: false, serialNumber: 0x3002)
            forge.signer.key = key
            forge.signer.chain = [plain, VerificationOrderTests.pki.intermediate, VerificationOrderTests.pki.root]
        },
        Fault("bundleId of another app", .claims, .bundleIdMismatch, parts: [.bundleId]) { $0.bundleId = "com.example.other" },
        Fault("environment Production", .claims, .environmentMismatch, parts: [.environment]) { $0.environment = "Production" },
    ]

    /// Every pair of faults that touch different parts of the input.
    static let pairs: [FaultPair] = faults.indices.flatMap { i in
        faults.indices.filter { $0 > i && faults[i].parts.isDisjoint(with: faults[$0].parts) }.map { FaultPair(faults[i], faults[$0]) }
    }

    struct FaultPair: Sendable, CustomTestStringConvertible {
        let first: Fault
        let second: Fault
        init(_ first: Fault, _ second: Fault) { (self.first, self.second) = (first, second) }
        var testDescription: String { "\(first.name) + \(second.name)" }
    }

    static func verifier(cached: Bool) throws -> AppStoreVerifier {
        try makeVerifier(VerifierConfiguration(
            roots: [pki.root], environment: .sandbox, bundleId: bundleId,
            chainCacheCapacity: cached ? 256 : 0, headerCacheCapacity: cached ? 256 : 0, now: { VerificationOrderTests.now }))
    }

    static func forged(_ faults: [Fault]) throws -> String {
        var forge = Forge()
        // Chain replacements first, so signer adjustments (alg, crit, signature) apply on top.
        for fault in faults.sorted(by: { $0.replacesChain && !$1.replacesChain }) { try fault.apply(&forge) }
        return try forge.jws()
    }

    /// The documented winner: the earlier step; within one step, the reason it checks first.
    static func expectedWinner(_ pair: FaultPair) throws -> Fault {
        let order = AppStoreVerifier.verificationOrder
        let a = try #require(order.firstIndex(of: pair.first.step))
        let b = try #require(order.firstIndex(of: pair.second.step))
        if a != b { return a < b ? pair.first : pair.second }
        let reasons = pair.first.step.reasons
        let ra = try #require(reasons.firstIndex(of: pair.first.reason))
        let rb = try #require(reasons.firstIndex(of: pair.second.reason))
        return ra <= rb ? pair.first : pair.second
    }

    @Test("the unforged input verifies (so every rejection below is caused by its faults)")
    func baseline() throws {
        let verifier = try Self.verifier(cached: false)
        let transaction = try verifier.verifyTransaction(Self.forged([]))
        #expect(transaction.payload.bundleId == Self.bundleId)
    }

    @Test("each fault alone gives its step's reason", arguments: faults)
    func singleFault(_ fault: Fault) throws {
        #expect(fault.step.reasons.contains(fault.reason), "\(fault.step) does not list \(fault.reason)")
        let jws = try Self.forged([fault])
        for cached in [false, true] {
            let verifier = try Self.verifier(cached: cached)
            expectRejection(fault.reason, "\(fault.name), cached: \(cached)") { try verifier.verifyTransaction(jws) }
        }
    }

    @Test("two faults at once: the reason of the earlier documented step", arguments: pairs)
    func twoFaults(_ pair: FaultPair) throws {
        let winner = try Self.expectedWinner(pair)
        let jws = try Self.forged([pair.first, pair.second])
        for cached in [false, true] {
            let verifier = try Self.verifier(cached: cached)
            expectRejection(winner.reason, "\(pair.testDescription), cached: \(cached)") { try verifier.verifyTransaction(jws) }
        }
    }

    @Test("the fault set covers every step before nesting, and pairs across steps exist")
    func coverage() {
        let covered = Set(Self.faults.map(\.step))
        #expect(covered == Set(AppStoreVerifier.verificationOrder.filter { $0 != .nested }))
        #expect(Self.pairs.count >= 40)
    }

    // MARK: - Nesting (step 7) comes after the notification's own steps

    static func notification(bundleId: String, environment: String, nested: String, signer: JWSSigner = pki.signer) throws -> String {
        try signer.sign(json: #"{"notificationType":"DID_RENEW","notificationUUID":"6b1d2c3e-0000-4000-8000-000000000002","version":"2.0","signedDate":\#(signedDate),"data":{"bundleId":"\#(bundleId)","environment":"\#(environment)","signedTransactionInfo":"\#(nested)"}}"#)
    }

    @Test("a forged nested JWS loses to a failing outer step, and is nested_jws_invalid otherwise")
    func nestedIsLast() throws {
        let verifier = try Self.verifier(cached: false)
        let bad = try Self.forged([try #require(Self.faults.first { $0.reason == .invalidSignature })])
        let good = try Self.forged([])

        #expect(throws: Never.self) { try verifier.verifyNotification(Self.notification(bundleId: Self.bundleId, environment: "Sandbox", nested: good)) }
        let alone = expectRejection(.nestedJWSInvalid) {
            try verifier.verifyNotification(Self.notification(bundleId: Self.bundleId, environment: "Sandbox", nested: bad))
        }
        #expect(alone?.detail.contains("invalid_signature") == true)
        expectRejection(.bundleIdMismatch, "outer claims before nesting") {
            try verifier.verifyNotification(Self.notification(bundleId: "com.example.other", environment: "Sandbox", nested: bad))
        }
        expectRejection(.environmentMismatch, "outer claims before nesting") {
            try verifier.verifyNotification(Self.notification(bundleId: Self.bundleId, environment: "Production", nested: bad))
        }
        expectRejection(.invalidCertificateChain, "outer chain before nesting") {
            try verifier.verifyNotification(Self.notification(bundleId: Self.bundleId, environment: "Sandbox", nested: bad, signer: Self.otherPKI.signer))
        }
    }

    // MARK: - The docs state the same order

    /// Rows of the order table in docs/verification.md: `| 1 | `compact_jws` | ... | `malformed_jws`, ... |`.
    static func documentedOrder() throws -> [(step: String, reasons: [String])] {
        let url = FixturePaths.packageRoot.appendingPathComponent("docs/verification.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> (String, [String])? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5, Int(cells[1]) != nil, let last = cells.dropLast().last else { return nil }
            return (Self.backticked(cells[2]).first ?? "", Self.backticked(last))
        }
    }

    static func backticked(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test("docs/verification.md lists the steps and reason codes in the code's order")
    func docsMatchCode() throws {
        let documented = try Self.documentedOrder()
        #expect(documented.map(\.step) == AppStoreVerifier.verificationOrder.map(\.rawValue))
        #expect(documented.map(\.reasons) == AppStoreVerifier.verificationOrder.map { $0.reasons.map(\.rawValue) })
    }
}

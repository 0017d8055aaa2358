import Foundation
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// The OCSP wrappers against responses `openssl ocsp` signs (file mode, no network) and
/// against bytes crafted or broken on purpose.
@Suite("OCSP wrappers")
struct OCSPWrapperTests {
    static let authorityInfoAccessOID = "1.3.6.1.5.5.7.1.1"
    static let extendedKeyUsageOID = "2.5.29.37"

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// The leaf's request and `openssl ocsp`'s response to it, signed by the intermediate.
    static func answer(
        _ pki: TestPKI, entries: [OCSPTestResponder.Entry]? = nil, nonce: Bool = false, validMinutes: Int = 60
    ) throws -> (OCSPRequest, OCSPResponse) {
        let request = try OCSPRequest(certificate: pki.leaf, issuer: pki.intermediate, nonce: nonce)
        let der = try OCSPTestResponder.respond(
            to: request, issuer: pki.intermediate, signer: pki.intermediate, signerKey: pki.intermediateKey,
            entries: entries ?? [.valid(pki.leaf)], validMinutes: validMinutes)
        return (request, OCSPResponse(derEncoded: der))
    }

    @Test("the test PKI names OCSP responders only when asked; the default certificates carry no AIA or EKU")
    func authorityInfoAccess() throws {
        let plain = try TestPKI()
        for certificate in plain.chain {
            #expect(certificate.ocspURLs.isEmpty)
            #expect(!certificate.hasExtension(oid: Self.authorityInfoAccessOID))
            #expect(!certificate.hasExtension(oid: Self.extendedKeyUsageOID))
        }
        let named = try TestPKI(intermediateOCSPURL: "http://127.0.0.1:1/", leafOCSPURL: "http://127.0.0.1:2/")
        #expect(named.intermediate.ocspURLs == ["http://127.0.0.1:1/"])
        #expect(named.leaf.ocspURLs == ["http://127.0.0.1:2/"])
        #expect(named.root.ocspURLs.isEmpty)
        // A root names no responder: nothing above it could revoke it.
        #expect(AppleRoots.appleRootCAG3.ocspURLs.isEmpty)
    }

    @Test("good, signed by the issuer itself, with thisUpdate/nextUpdate read")
    func goodByIssuer() throws {
        let pki = try TestPKI()
        let (request, response) = try Self.answer(pki, validMinutes: 30)
        let single = try response.singleResponse(for: pki.leaf, issuer: pki.intermediate, request: request, atEpochSeconds: Self.now)
        #expect(single.status == .good)
        #expect(abs(single.thisUpdateEpochSeconds - Self.now) < 120)
        #expect(abs((single.nextUpdateEpochSeconds ?? 0) - (Self.now + 1_800)) < 120)
    }

    @Test("good, signed by a delegated responder (OCSPSigning EKU); refused from a signer without the EKU or of another PKI")
    func delegatedResponder() throws {
        let pki = try TestPKI()
        let request = try OCSPRequest(certificate: pki.leaf, issuer: pki.intermediate)
        let delegateKey = try ECPrivateKey(generating: .p256)
        let delegate = try pki.issueOCSPResponder(key: delegateKey)
        let delegated = try OCSPTestResponder.respond(
            to: request, issuer: pki.intermediate, signer: delegate, signerKey: delegateKey, entries: [.valid(pki.leaf)])
        let single = try OCSPResponse(derEncoded: delegated).singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        #expect(single.status == .good)

        // A leaf of the same issuer, no OCSPSigning: not a delegate.
        let plainKey = try ECPrivateKey(generating: .p256)
        let plain = try pki.issueLeaf(key: plainKey, serialNumber: 0x5001)
        let byPlain = try OCSPTestResponder.respond(
            to: request, issuer: pki.intermediate, signer: plain, signerKey: plainKey, entries: [.valid(pki.leaf)])
        #expect(throws: OCSPError.self) {
            try OCSPResponse(derEncoded: byPlain).singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        }
        // Another PKI's delegated responder: the issuer did not sign it.
        let other = try TestPKI(name: "Other")
        let otherDelegate = try other.issueOCSPResponder(key: delegateKey)
        let byOther = try OCSPTestResponder.respond(
            to: request, issuer: pki.intermediate, signer: otherDelegate, signerKey: delegateKey, entries: [.valid(pki.leaf)])
        do {
            _ = try OCSPResponse(derEncoded: byOther).singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
            Issue.record("accepted a response from another PKI's responder")
        } catch {
            guard case .badSignature = error else { Issue.record("expected badSignature, got \(error)"); return }
        }
        // The root answering for the leaf is not the leaf's issuer.
        let byRoot = try OCSPTestResponder.respond(
            to: request, issuer: pki.intermediate, signer: pki.root, signerKey: pki.rootKey, entries: [.valid(pki.leaf)])
        #expect(throws: OCSPError.self) {
            try OCSPResponse(derEncoded: byRoot).singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        }
    }

    @Test("revoked with its reason and date; unknown for a serial the responder does not hold")
    func revokedAndUnknown() throws {
        let pki = try TestPKI()
        let revokedAt = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let (_, revoked) = try Self.answer(pki, entries: [.revoked(pki.leaf, date: revokedAt, reason: "keyCompromise")])
        let single = try revoked.singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        #expect(single.status == .revoked(reason: .init(code: 1), revokedAtEpochSeconds: 1_767_225_600))
        #expect(OCSPSingleResponse.RevocationReason(code: 1).description == "keyCompromise")

        let otherLeaf = try pki.issueLeaf(key: try ECPrivateKey(generating: .p256), serialNumber: 0x7777)
        let (_, unknown) = try Self.answer(pki, entries: [.valid(otherLeaf)])
        #expect(try unknown.singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now).status == .unknown)
        // The response speaks of the leaf only: asking it about another certificate finds nothing.
        let (_, good) = try Self.answer(pki)
        #expect(throws: OCSPError.certificateNotInResponse) {
            try good.singleResponse(for: otherLeaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        }
    }

    @Test("stale past nextUpdate, not yet valid before thisUpdate, both within the leeway accepted")
    func freshness() throws {
        let pki = try TestPKI()
        let (_, response) = try Self.answer(pki, validMinutes: 10)
        let check = { (at: Int64) throws(OCSPError) in
            _ = try response.singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: at, leewaySeconds: 300)
        }
        try check(Self.now + 600 + 200)  // past nextUpdate, within the leeway
        do {
            try check(Self.now + 3_600)
            Issue.record("a stale response was accepted")
        } catch {
            guard case .stale = error else { Issue.record("expected stale, got \(error)"); return }
        }
        do {
            try check(Self.now - 3_600)
            Issue.record("a response from the future was accepted")
        } catch {
            guard case .notYetValid = error else { Issue.record("expected notYetValid, got \(error)"); return }
        }
    }

    @Test("a nonce is echoed and checked; a response to another request's nonce is refused")
    func nonce() throws {
        let pki = try TestPKI()
        let (request, response) = try Self.answer(pki, nonce: true)
        #expect(request.hasNonce)
        #expect(try response.singleResponse(for: pki.leaf, issuer: pki.intermediate, request: request, atEpochSeconds: Self.now).status == .good)
        let second = try OCSPRequest(certificate: pki.leaf, issuer: pki.intermediate, nonce: true)
        #expect(second.derEncoded != request.derEncoded)
        #expect(throws: OCSPError.nonceMismatch) {
            try response.singleResponse(for: pki.leaf, issuer: pki.intermediate, request: second, atEpochSeconds: Self.now)
        }
        // A response without a nonce answers a request with one (responders that pre-sign ignore nonces).
        let (_, plain) = try Self.answer(pki)
        #expect(try plain.singleResponse(for: pki.leaf, issuer: pki.intermediate, request: second, atEpochSeconds: Self.now).status == .good)
    }

    @Test("responder statuses other than successful come back by name", arguments: [
        (UInt8(1), OCSPResponderStatus.malformedRequest), (2, .internalError), (3, .tryLater), (5, .sigRequired), (6, .unauthorized),
        (4, .other(4)),
    ])
    func responderStatus(code: UInt8, status: OCSPResponderStatus) throws {
        let pki = try TestPKI()
        // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED }: `30 03 0A 01 03` is tryLater.
        let response = OCSPResponse(derEncoded: [0x30, 0x03, 0x0A, 0x01, code])
        #expect(throws: OCSPError.responderStatus(status)) {
            try response.singleResponse(for: pki.leaf, issuer: pki.intermediate, atEpochSeconds: Self.now)
        }
    }

    @Test("truncated, extended, garbage and bit-flipped responses throw, never crash, never turn good into anything else")
    func malformed() throws {
        let pki = try TestPKI()
        let (request, response) = try Self.answer(pki)
        let der = response.derEncoded
        func evaluate(_ bytes: [UInt8]) -> Result<OCSPSingleResponse, OCSPError> {
            Result { () throws(OCSPError) in
                try OCSPResponse(derEncoded: bytes).singleResponse(for: pki.leaf, issuer: pki.intermediate, request: request, atEpochSeconds: Self.now)
            }
        }
        for length in 0..<der.count {
            guard case .failure = evaluate(Array(der.prefix(length))) else { Issue.record("prefix \(length) accepted"); continue }
        }
        guard case .failure(.malformed) = evaluate(der + [0x00]) else { Issue.record("trailing byte accepted"); return }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let garbage = (0..<Int.random(in: 1...400, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if case .success = evaluate(garbage) { Issue.record("garbage accepted") }
            if case .success = evaluate([0x30, 0x82] + garbage) { Issue.record("garbage with a SEQUENCE header accepted") }
        }
        for _ in 0..<600 {
            var flipped = der
            let index = Int.random(in: 0..<der.count, using: &generator)
            flipped[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            // A flip in what the signature does not cover (the certificates field) may still
            // verify; whatever is accepted must still be the same answer.
            if case .success(let single) = evaluate(flipped), single.status != .good {
                Issue.record("flip at \(index) changed the answer to \(single.status)")
            }
        }
    }
}

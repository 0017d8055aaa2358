import Foundation
import SignetFixtures
import SignetHTTP
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Synchronization
import Testing

/// The revocation checker over the real HTTP transport, against `openssl ocsp` responders
/// the test PKI's certificates name in their authorityInfoAccess (and against servers that
/// answer what `openssl ocsp` never does, or nothing at all).
@Suite("OCSP revocation checker")
struct OCSPRevocationCheckerTests {
    /// A PKI whose leaf names `url` as its responder.
    static func pki(leafResponder url: String) throws -> TestPKI { try TestPKI(leafOCSPURL: url) }

    static func isGood(_ answer: RevocationAnswer) -> Bool { if case .good = answer { true } else { false } }

    @Test("good for the leaf and the intermediate; a second check is served from the cache with no request")
    func goodThenCached() async throws {
        let bed = try await OCSPTestBed.start(validMinutes: 30)
        defer { bed.stop() }
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport())
        let first = await checker.check(chain: bed.pki.chain)
        #expect(first.answers.map(\.certificate) == [bed.pki.leaf, bed.pki.intermediate])
        #expect(first.answers.allSatisfy { Self.isGood($0.answer) }, "\(first.answers.map(\.answer))")
        guard case .good(let nextUpdate) = first.verdict else { Issue.record("verdict \(first.verdict)"); return }
        #expect(abs(nextUpdate.timeIntervalSinceNow - 1_800) < 120)
        #expect(await bed.leafResponder.settledRequestCount(expecting: 1) == 1)
        #expect(await bed.intermediateResponder.settledRequestCount(expecting: 1) == 1)

        let second = await checker.check(chain: bed.pki.chain)
        #expect(second.verdict == first.verdict)
        #expect(await bed.leafResponder.settledRequestCount(expecting: 1) == 1)
        #expect(await bed.intermediateResponder.settledRequestCount(expecting: 1) == 1)
    }

    @Test("revoked (index line R) comes back with reason and date, and is kept")
    func revoked() async throws {
        let revokedAt = Date(timeIntervalSince1970: 1_767_225_600)
        let bed = try await OCSPTestBed.start { .revoked($0.leaf, date: revokedAt, reason: "keyCompromise") }
        defer { bed.stop() }
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport())
        let result = await checker.check(chain: bed.pki.chain)
        #expect(result.verdict == .revoked(reason: .init(code: 1), date: revokedAt))
        #expect(Self.isGood(result.answers[1].answer))
        _ = await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate)
        #expect(await bed.leafResponder.settledRequestCount(expecting: 1) == 1)
    }

    @Test("a serial the responder does not hold is unknown, retryable, not cached")
    func unknown() async throws {
        let bed = try await OCSPTestBed.start { .valid(try $0.issueLeaf(key: try ECPrivateKey(generating: .p256), serialNumber: 0x7777)) }
        defer { bed.stop() }
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport())
        #expect(await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) == .failed(.unknown))
        #expect(await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) == .failed(.unknown))
        #expect(await bed.leafResponder.settledRequestCount(expecting: 2) == 2)
    }

    @Test("tryLater and internalError from a responder (crafted DER), an HTTP 500, garbage", arguments: [
        (200, [UInt8]([0x30, 0x03, 0x0A, 0x01, 0x03]), RevocationFailure.tryLater),
        (200, [0x30, 0x03, 0x0A, 0x01, 0x02], .internalError),
        (200, [0x30, 0x03, 0x0A, 0x01, 0x06], .refused("unauthorized")),
        (500, [], .unreachable("HTTP status 500")),
    ])
    func responderRefuses(status: Int, body: [UInt8], failure: RevocationFailure) async throws {
        let responder = try await FixedHTTPResponder(status: status, body: body)
        defer { responder.stop() }
        let pki = try Self.pki(leafResponder: responder.url)
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport())
        #expect(await checker.check(pki.leaf, issuer: pki.intermediate) == .failed(failure))
        #expect(await responder.settledRequestCount(expecting: 1) == 1)
    }

    @Test("garbage from the responder is malformed")
    func garbage() async throws {
        let responder = try await FixedHTTPResponder(body: Array("<html>oops</html>".utf8))
        defer { responder.stop() }
        let pki = try Self.pki(leafResponder: responder.url)
        let answer = await OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport()).check(pki.leaf, issuer: pki.intermediate)
        guard case .failed(.malformed) = answer else { Issue.record("got \(answer)"); return }
    }

    @Test("an answer signed by someone other than the issuer or its delegate is untrusted")
    func untrusted() async throws {
        let port = try freeLocalPort()
        let pki = try Self.pki(leafResponder: "http://127.0.0.1:\(port)/")
        // The root signs for the leaf: a real signature, but not by the leaf's issuer.
        let responder = try await OCSPTestResponder(
            issuer: pki.intermediate, signer: pki.root, signerKey: pki.rootKey, entries: [.valid(pki.leaf)], port: port)
        defer { responder.stop() }
        let answer = await OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport()).check(pki.leaf, issuer: pki.intermediate)
        guard case .failed(.untrusted) = answer else { Issue.record("got \(answer)"); return }
        #expect(await responder.settledRequestCount(expecting: 1) == 1)
    }

    @Test("a closed port is unreachable; a certificate without AIA has no responder")
    func unreachable() async throws {
        let pki = try Self.pki(leafResponder: "http://127.0.0.1:\(try freeLocalPort())/")
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport())
        let answer = await checker.check(pki.leaf, issuer: pki.intermediate)
        guard case .failed(.unreachable) = answer else { Issue.record("got \(answer)"); return }
        #expect(await checker.check(pki.intermediate, issuer: pki.root) == .failed(.noResponder))
    }

    @Test("a responder that accepts and never answers: the deadline fires")
    func slowResponder() async throws {
        // Listening, never accepting: the kernel completes the handshake and takes the request.
        let silent = try LocalPortHolder(listening: true)
        defer { silent.close() }
        let pki = try Self.pki(leafResponder: "http://127.0.0.1:\(silent.port)/")
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport(), options: .init(deadline: .milliseconds(500)))
        let start = ContinuousClock.now
        #expect(await checker.check(pki.leaf, issuer: pki.intermediate) == .failed(.deadlineExceeded))
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test("the deadline holds over a transport that ignores its timeout (it stops when cancelled)")
    func deadlineOverStubbornTransport() async throws {
        let pki = try Self.pki(leafResponder: "http://127.0.0.1:9/")
        let slow = SlowTransport(inner: AsyncHTTPClientOCSPTransport(), delay: .seconds(30), ignoreCancellation: false)
        let checker = OCSPRevocationChecker(transport: slow, options: .init(deadline: .milliseconds(300)))
        let start = ContinuousClock.now
        #expect(await checker.check(pki.leaf, issuer: pki.intermediate) == .failed(.deadlineExceeded))
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test("an answer whose nextUpdate has passed (clock two hours ahead) is stale")
    func stale() async throws {
        let bed = try await OCSPTestBed.start(validMinutes: 1)
        defer { bed.stop() }
        let later = Date().addingTimeInterval(7_200)
        let checker = OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport(), clock: { later })
        let answer = await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate)
        guard case .failed(.stale(let nextUpdate)) = answer else { Issue.record("got \(answer)"); return }
        #expect(abs(nextUpdate.timeIntervalSinceNow - 60) < 60)
    }

    @Test("ten concurrent checks of a cold certificate make one request and share its answer")
    func singleFlight() async throws {
        let bed = try await OCSPTestBed.start()
        defer { bed.stop() }
        let transport = SlowTransport(inner: AsyncHTTPClientOCSPTransport(), delay: .milliseconds(300))
        let checker = OCSPRevocationChecker(transport: transport)
        let answers = await withTaskGroup(of: RevocationAnswer.self) { group in
            for _ in 0..<10 { group.addTask { await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 10)
        #expect(Set(answers).count == 1)
        #expect(answers.allSatisfy(Self.isGood))
        #expect(transport.requests == 1)
        #expect(await bed.leafResponder.settledRequestCount(expecting: 1) == 1)
    }

    @Test("near nextUpdate a check answers from the cache at once and refreshes in the background, once")
    func refreshAhead() async throws {
        let bed = try await OCSPTestBed.start(validMinutes: 10)
        defer { bed.stop() }
        let transport = SlowTransport(inner: AsyncHTTPClientOCSPTransport(), delay: .seconds(1))
        let clock = TestClock(Date())
        // Window 600 s, margin 10% = 60 s (refreshMargin 0 here): refresh from nextUpdate - 60 s.
        let checker = OCSPRevocationChecker(transport: transport, options: .init(refreshMargin: .zero), clock: { clock.now })
        let first = await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate)
        guard case .good(let nextUpdate) = first else { Issue.record("got \(first)"); return }
        clock.set(nextUpdate.addingTimeInterval(-200))
        #expect(await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) == first)
        #expect(transport.requests == 1)  // outside the margin: no refresh

        clock.set(nextUpdate.addingTimeInterval(-30))
        let start = ContinuousClock.now
        #expect(await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) == first)
        #expect(await checker.check(bed.pki.leaf, issuer: bed.pki.intermediate) == first)
        #expect(ContinuousClock.now - start < .milliseconds(500))  // the 1 s refresh was not waited for
        #expect(await bed.leafResponder.waitForRequests(2, timeout: .seconds(10)))
        #expect(transport.requests == 2)  // two checks in the margin, one refresh
    }
}

/// A transport that waits `delay` before the real one and counts requests.
final class SlowTransport: OCSPTransport {
    let inner: any OCSPTransport
    let delay: Duration
    let ignoreCancellation: Bool
    private let count = Mutex(0)

    init(inner: any OCSPTransport, delay: Duration, ignoreCancellation: Bool = true) {
        self.inner = inner
        self.delay = delay
        self.ignoreCancellation = ignoreCancellation
    }

    var requests: Int { count.withLock { $0 } }

    func post(_ request: [UInt8], to url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8] {
        count.withLock { $0 += 1 }
        do {
            try await Task.sleep(for: delay)
        } catch {
            if !ignoreCancellation { throw .unreachable("cancelled") }
        }
        return try await inner.post(request, to: url, timeout: timeout)
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = date } }
}

import Foundation
import MetricsTestKit
import SignetFixtures
import SignetHTTP
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// The checker's CRL fallback over the real HTTP transport: the intermediate names a local
/// distribution point (a python3 server serving a list `openssl ca -gencrl` signed) beside an
/// OCSP responder that is down, refuses, or is not named at all.
@Suite("CRL fallback")
struct CRLFallbackTests {
    static let revokedAt = Date(timeIntervalSince1970: 1_767_225_600)

    /// A PKI whose intermediate names `ocspURL` (nil: none) and a CRL served on 127.0.0.1, the
    /// list made by `list` (signed by the root unless the closure signs with another key).
    struct Bed {
        let pki: TestPKI
        let distributionPoint: FixedHTTPResponder
        let metrics = TestMetrics()

        init(ocspURL: String?, status: Int = 200, list: (TestPKI) throws -> [UInt8]) async throws {
            let holder = try LocalPortHolder(listening: false)
            let port = holder.port
            holder.close()
            pki = try TestPKI(intermediateOCSPURL: ocspURL, intermediateCRLURL: "http://127.0.0.1:\(port)/applerootcag3.crl")
            distributionPoint = try await FixedHTTPResponder(status: status, body: try list(pki), port: port)
        }

        func checker() -> OCSPRevocationChecker {
            OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport(), metrics: RevocationMetrics(factory: metrics))
        }

        func fetches(_ result: String) -> Int64 {
            (try? metrics.expectCounter("signet_revocation_crl_fetches_total", [("result", result)]).totalValue) ?? 0
        }

        func check(_ checker: OCSPRevocationChecker) async -> RevocationAnswer {
            await checker.check(pki.intermediate, issuer: pki.root)
        }
    }

    /// An OCSP URL nothing listens on.
    static func deadURL() throws -> String { "http://127.0.0.1:\(try freeLocalPort())/" }

    @Test("OCSP unreachable: the root's CRL answers good until its nextUpdate; the next check is a cache hit, nothing fetched")
    func unreachableOCSPThenCRLGood() async throws {
        let nextUpdate = Date().addingTimeInterval(7_200).rounded
        let bed = try await Bed(ocspURL: try Self.deadURL()) {
            try TestCRL.make(issuer: $0.root, key: $0.rootKey, nextUpdate: nextUpdate)
        }
        defer { bed.distributionPoint.stop() }
        let checker = bed.checker()
        #expect(await bed.check(checker) == .good(nextUpdate: nextUpdate))
        #expect(await bed.check(checker) == .good(nextUpdate: nextUpdate))
        #expect(await bed.distributionPoint.settledRequestCount(expecting: 1) == 1)
        #expect(bed.fetches("good") == 1)
        #expect(try bed.metrics.expectCounter("signet_revocation_cache_hits_total").totalValue == 1)
    }

    @Test("OCSP tryLater: a CRL listing the intermediate revokes it with the entry's reason and date, and it stays revoked")
    func tryLaterThenCRLRevoked() async throws {
        let ocsp = try await FixedHTTPResponder(body: [0x30, 0x03, 0x0A, 0x01, 0x03])
        defer { ocsp.stop() }
        let bed = try await Bed(ocspURL: ocsp.url) {
            try TestCRL.make(issuer: $0.root, key: $0.rootKey, entries: [.revoked($0.intermediate, date: Self.revokedAt, reason: "cACompromise")])
        }
        defer { bed.distributionPoint.stop() }
        let checker = bed.checker()
        #expect(await bed.check(checker) == .revoked(reason: .init(code: 2), date: Self.revokedAt))
        #expect(await bed.check(checker) == .revoked(reason: .init(code: 2), date: Self.revokedAt))
        #expect(await ocsp.settledRequestCount(expecting: 1) == 1)
        #expect(await bed.distributionPoint.settledRequestCount(expecting: 1) == 1)
        #expect(bed.fetches("revoked") == 1)
    }

    @Test("OCSP answering good is never second-guessed: no CRL is fetched")
    func goodOCSPNeedsNoCRL() async throws {
        let holder = try LocalPortHolder(listening: false)
        let port = holder.port
        holder.close()
        let bed = try await OCSPTestBed.start(intermediateCRLURL: "http://127.0.0.1:\(port)/root.crl")
        defer { bed.stop() }
        let list = try TestCRL.make(
            issuer: bed.pki.root, key: bed.pki.rootKey, entries: [.revoked(bed.pki.intermediate, date: Self.revokedAt, reason: "")])
        let distributionPoint = try await FixedHTTPResponder(body: list, port: port)
        defer { distributionPoint.stop() }
        let answer = await OCSPRevocationChecker(transport: AsyncHTTPClientOCSPTransport()).check(bed.pki.intermediate, issuer: bed.pki.root)
        guard case .good = answer else { Issue.record("\(answer)"); return }
        #expect(await distributionPoint.settledRequestCount(expecting: 0) == 0)
    }

    @Test("OCSP and the CRL both fail: the answer is OCSP's failure, counted as a failed fetch, asked again next time")
    func bothFail() async throws {
        let bed = try await Bed(ocspURL: try Self.deadURL(), status: 404) { _ in [] }
        defer { bed.distributionPoint.stop() }
        let checker = bed.checker()
        for _ in 0..<2 {
            let answer = await bed.check(checker)
            guard case .failed(.unreachable(let detail)) = answer, !detail.contains("404") else { Issue.record("\(answer)"); return }
        }
        #expect(await bed.distributionPoint.settledRequestCount(expecting: 2) == 2)
        #expect(bed.fetches("unreachable") == 2)
    }

    @Test("no OCSP responder named: a CRL signed by another key is untrusted, a stale one stale, never good")
    func noResponderCRLFailure() async throws {
        let impostor = try TestPKI()
        let forged = try await Bed(ocspURL: nil) { _ in try TestCRL.make(issuer: impostor.root, key: impostor.rootKey) }
        defer { forged.distributionPoint.stop() }
        let forgedAnswer = await forged.check(forged.checker())
        guard case .failed(.untrusted) = forgedAnswer else { Issue.record("\(forgedAnswer)"); return }

        let nextUpdate = Date().addingTimeInterval(-3_600).rounded
        let stale = try await Bed(ocspURL: nil) {
            try TestCRL.make(issuer: $0.root, key: $0.rootKey, lastUpdate: nextUpdate.addingTimeInterval(-86_400), nextUpdate: nextUpdate)
        }
        defer { stale.distributionPoint.stop() }
        #expect(await stale.check(stale.checker()) == .failed(.stale(nextUpdate: nextUpdate)))
        #expect(stale.fetches("stale") == 1)
    }

    @Test("a CRL larger than 8 MiB is not read")
    func oversizedList() async throws {
        let bed = try await Bed(ocspURL: nil) { _ in [UInt8](repeating: 0x30, count: (8 << 20) + 1) }
        defer { bed.distributionPoint.stop() }
        let answer = await bed.check(bed.checker())
        guard case .failed(.unreachable) = answer else { Issue.record("\(answer)"); return }
    }
}

extension Date {
    /// Whole seconds, as a CRL's times are.
    fileprivate var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}

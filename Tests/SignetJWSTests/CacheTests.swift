import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import Testing

/// The header and chain caches speed verification up and must never change a verdict.
@Suite("Caches")
struct CacheTests {
    static let now = Fixture.fixedNow

    func verifier(roots: [X509Certificate], cached: Bool) throws -> AppStoreVerifier {
        try makeVerifier(VerifierConfiguration(
            roots: roots, chainCacheCapacity: cached ? 256 : 0, headerCacheCapacity: cached ? 256 : 0, now: { Self.now }))
    }

    static func transaction(signedDate: Int64) -> String {
        #"{"transactionId":"1","originalTransactionId":"1","bundleId":"com.example","environment":"Sandbox","signedDate":\#(signedDate)}"#
    }

    @Test("the same input verified twice gives the same result, valid or not")
    func repeatable() throws {
        let pki = try TestPKI()
        let verifier = try verifier(roots: [pki.root], cached: true)
        let good = try pki.signer.sign(json: Self.transaction(signedDate: 1_700_000_000_000))
        let first = try verifier.verifyTransaction(good)
        let second = try verifier.verifyTransaction(good)
        #expect(first.payloadJSON == second.payloadJSON)
        #expect(verifier.cacheCounts.headers == 1 && verifier.cacheCounts.chains == 1)
        let stranger = try ECPrivateKey(generating: .p256)
        var signer = pki.signer
        signer.key = stranger
        let bad = try signer.sign(json: Self.transaction(signedDate: 1_700_000_000_000))
        let rejections = (0..<3).compactMap { _ in expectRejection(.invalidSignature) { try verifier.verifyTransaction(bad) } }
        #expect(Set(rejections).count == 1)
    }

    @Test("a cached chain does not vouch for a signedDate outside its validity window")
    func outOfWindowAfterCaching() throws {
        // Leaf valid 2024-01-01 … 2025-01-01 (root and intermediate 2020 … 2045).
        let notBefore: Int64 = 1_704_067_200
        let notAfter: Int64 = 1_735_689_600
        let pki = try TestPKI(
            leafNotBefore: Date(timeIntervalSince1970: TimeInterval(notBefore)),
            leafNotAfter: Date(timeIntervalSince1970: TimeInterval(notAfter)))
        let cached = try verifier(roots: [pki.root], cached: true)
        let fresh = try verifier(roots: [pki.root], cached: false)
        // Prime the chain cache.
        _ = try cached.verifyTransaction(pki.signer.sign(json: Self.transaction(signedDate: 1_720_000_000_000)))
        #expect(cached.cacheCounts.chains == 1)
        expectRejection(.certificateNotValidAtSignedDate, "after notAfter") {
            try cached.verifyTransaction(pki.signer.sign(json: Self.transaction(signedDate: 1_750_000_000_000)))
        }
        expectRejection(.certificateNotValidAtSignedDate, "before notBefore") {
            try cached.verifyTransaction(pki.signer.sign(json: Self.transaction(signedDate: 1_690_000_000_000)))
        }
        // At and around the boundaries the cached verifier agrees with an uncached one
        // (which asks OpenSSL every time), to the millisecond.
        for second in [notBefore - 1, notBefore, notBefore + 1, notAfter - 1, notAfter, notAfter + 1] {
            for extra: Int64 in [0, 999] {
                let jws = try pki.signer.sign(json: Self.transaction(signedDate: second * 1000 + extra))
                #expect(verdict { try cached.verifyTransaction(jws) } == verdict { try fresh.verifyTransaction(jws) }, "at \(second).\(extra)")
            }
        }
        // OpenSSL's rule is notBefore ≤ t < notAfter.
        #expect(throws: Never.self) { try fresh.verifyTransaction(pki.signer.sign(json: Self.transaction(signedDate: notBefore * 1000))) }
    }

    func verdict(_ body: () throws -> VerifiedTransaction) -> String {
        do {
            _ = try body()
            return "valid"
        } catch {
            return "\(error)"
        }
    }

    @Test("a full cache evicts instead of growing")
    func bounded() throws {
        let pki = try TestPKI()
        let verifier = try makeVerifier(VerifierConfiguration(
            roots: [pki.root], chainCacheCapacity: 2, headerCacheCapacity: 2, now: { Self.now }))
        for index in 0..<6 {
            var signer = pki.signer
            signer.extraHeaderMembers = [#""kid":"\#(index)""#]  // a distinct header segment each time
            _ = try verifier.verifyTransaction(signer.sign(json: Self.transaction(signedDate: 1_700_000_000_000)))
        }
        #expect(verifier.cacheCounts.headers == 2)
        #expect(verifier.cacheCounts.chains == 1)
        verifier.clearCaches()
        #expect(verifier.cacheCounts.headers == 0 && verifier.cacheCounts.chains == 0)
    }

    @Test("one verifier shared by many threads gives consistent verdicts")
    func concurrent() async throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let verifier = try makeVerifier(VerifierConfiguration(chainCacheCapacity: 4, headerCacheCapacity: 4, now: { RealNotificationTests.now }))
        let failures = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var failures = 0
                    for round in 0..<40 {
                        let index = (task * 7 + round) % lines.count
                        do {
                            _ = try verifier.verifyNotification(lines[index])
                        } catch {
                            failures += 1
                        }
                        var tampered = Array(lines[index].utf8)
                        tampered[tampered.count - 5] = tampered[tampered.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                        if (try? verifier.verifyNotification(tampered)) != nil { failures += 1 }
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }
}

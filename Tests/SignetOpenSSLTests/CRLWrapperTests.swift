import Foundation
import SignetFixtures
import SignetOpenSSL
import SignetTestSupport
import Testing

/// The CRL reader against lists `openssl ca -gencrl` signs, and against lists that must not
/// be believed: another signer, another issuer name, stale, not yet valid, incomplete,
/// garbage.
@Suite("CRL wrappers")
struct CRLWrapperTests {
    static let distributionPointsOID = "2.5.29.31"
    static let revokedAt = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// A list the root signs about the intermediate, and what it says about `pki.intermediate`.
    static func rootList(
        _ pki: TestPKI, entries: [OCSPTestResponder.Entry] = [], extensions: [String] = [], sections: String = ""
    ) throws -> CertificateRevocationList {
        CertificateRevocationList(
            derEncoded: try TestCRL.make(issuer: pki.root, key: pki.rootKey, entries: entries, extensions: extensions, sections: sections))
    }

    @Test("cRLDistributionPoints: named only when asked, read back in order; a root or a plain certificate names none")
    func distributionPoints() throws {
        let plain = try TestPKI()
        for certificate in plain.chain {
            #expect(certificate.crlURLs.isEmpty)
            #expect(!certificate.hasExtension(oid: Self.distributionPointsOID))
        }
        let named = try TestPKI(intermediateCRLURL: "http://127.0.0.1:1/root.crl", leafCRLURL: "http://127.0.0.1:2/wwdr.crl")
        #expect(named.intermediate.crlURLs == ["http://127.0.0.1:1/root.crl"])
        #expect(named.leaf.crlURLs == ["http://127.0.0.1:2/wwdr.crl"])
        #expect(named.root.crlURLs.isEmpty)
        #expect(named.intermediate.ocspURLs.isEmpty)
    }

    @Test("Apple's WWDR G6 intermediate names crl.apple.com's root CRL")
    func appleIntermediate() throws {
        let pem = try String(contentsOf: FixturePaths.appleReal.appendingPathComponent("AppleWWDRCAG6.pem"), encoding: .utf8)
        let intermediate = try X509Certificate(pemEncoded: pem)
        #expect(intermediate.crlURLs == ["http://crl.apple.com/applerootcag3.crl"])
        #expect(intermediate.ocspURLs == ["http://ocsp.apple.com/ocsp03-applerootcag3"])
    }

    @Test("a list without the certificate says not revoked, with its thisUpdate and nextUpdate")
    func notListed() throws {
        let pki = try TestPKI()
        let other = try TestPKI.makeIntermediate(
            key: try ECPrivateKey(generating: .p256), commonName: "other", issuer: pki.root, issuerKey: pki.rootKey,
            notBefore: TestPKI.defaultNotBefore, notAfter: TestPKI.defaultNotAfter, serialNumber: 0x0999)
        let lastUpdate = Date(timeIntervalSince1970: TimeInterval(Self.now - 60))
        let nextUpdate = lastUpdate.addingTimeInterval(7_200)
        let list = CertificateRevocationList(
            derEncoded: try TestCRL.make(
                issuer: pki.root, key: pki.rootKey, entries: [.revoked(other, date: Self.revokedAt, reason: "superseded")],
                lastUpdate: lastUpdate, nextUpdate: nextUpdate))
        let status = try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
        #expect(status.revocation == nil)
        #expect(status.thisUpdateEpochSeconds == Int64(lastUpdate.timeIntervalSince1970))
        #expect(status.nextUpdateEpochSeconds == Int64(nextUpdate.timeIntervalSince1970))
        // The same list does list the other certificate.
        let listed = try list.status(of: other, issuer: pki.root, atEpochSeconds: Self.now)
        #expect(listed.revocation == .init(reason: .init(code: 4), revokedAtEpochSeconds: Int64(Self.revokedAt.timeIntervalSince1970)))
    }

    @Test("a listed certificate is revoked with the entry's date and reason, or no reason when the entry gives none")
    func listed() throws {
        let pki = try TestPKI()
        let withReason = try Self.rootList(pki, entries: [.revoked(pki.intermediate, date: Self.revokedAt, reason: "keyCompromise")])
        let status = try withReason.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
        #expect(status.revocation?.reason == .init(code: 1))
        #expect(status.revocation?.revokedAtEpochSeconds == Int64(Self.revokedAt.timeIntervalSince1970))

        let withoutReason = try Self.rootList(pki, entries: [.revoked(pki.intermediate, date: Self.revokedAt, reason: "")])
        let bare = try withoutReason.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
        #expect(bare.revocation?.reason == nil)
        #expect(bare.revocation?.revokedAtEpochSeconds == Int64(Self.revokedAt.timeIntervalSince1970))
    }

    @Test("a list signed by another key under the same name is not believed")
    func anotherSigner() throws {
        let pki = try TestPKI()
        let impostor = try TestPKI()  // same names, other keys
        #expect(impostor.root.subject == pki.root.subject)
        let list = try Self.rootList(impostor, entries: [.revoked(pki.intermediate, date: Self.revokedAt, reason: "keyCompromise")])
        do {
            _ = try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
            Issue.record("accepted")
        } catch {
            guard case .badSignature = error else { Issue.record("\(error)"); return }
        }
    }

    @Test("a list issued under another name is refused before its signature is looked at")
    func wrongIssuer() throws {
        let pki = try TestPKI()
        // The intermediate's list, offered as the root's.
        let list = CertificateRevocationList(derEncoded: try TestCRL.make(issuer: pki.intermediate, key: pki.intermediateKey))
        do {
            _ = try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
            Issue.record("accepted")
        } catch {
            guard case .wrongIssuer = error else { Issue.record("\(error)"); return }
        }
    }

    @Test("stale past nextUpdate + leeway, not yet valid before thisUpdate - leeway; inside the leeway it is read")
    func freshness() throws {
        let pki = try TestPKI()
        let lastUpdate = Date(timeIntervalSince1970: 1_800_000_000)
        let nextUpdate = lastUpdate.addingTimeInterval(3_600)
        let list = CertificateRevocationList(
            derEncoded: try TestCRL.make(issuer: pki.root, key: pki.rootKey, lastUpdate: lastUpdate, nextUpdate: nextUpdate))
        let next = Int64(nextUpdate.timeIntervalSince1970)
        let this = Int64(lastUpdate.timeIntervalSince1970)
        #expect(throws: CRLError.stale(nextUpdate: next)) {
            try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: next + 301, leewaySeconds: 300)
        }
        #expect(try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: next + 299, leewaySeconds: 300).revocation == nil)
        #expect(throws: CRLError.notYetValid(thisUpdate: this)) {
            try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: this - 301, leewaySeconds: 300)
        }
        #expect(try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: this - 299, leewaySeconds: 300).revocation == nil)
    }

    @Test("incomplete lists are refused: delta, indirect, some reasons only, end-entity only for a CA, unknown critical extension", arguments: [
        (["deltaCRL = critical,DER:02:01:01"], "", "a delta CRL"),
        (["issuingDistributionPoint = critical,@idp"], "[idp]\nindirectCRL = TRUE", "an indirect CRL"),
        (["issuingDistributionPoint = critical,@idp"], "[idp]\nonlysomereasons = keyCompromise", "a CRL for some reasons only"),
        (["issuingDistributionPoint = critical,@idp"], "[idp]\nonlyuser = TRUE", "a CRL for end-entity certificates only"),
        (["1.3.6.1.4.1.55555.1 = critical,ASN1:NULL"], "", "unknown critical extension 1.3.6.1.4.1.55555.1"),
    ])
    func incomplete(extensions: [String], sections: String, detail: String) throws {
        let pki = try TestPKI()
        let list = try Self.rootList(pki, extensions: extensions, sections: sections)
        #expect(throws: CRLError.unsupported(detail)) { try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now) }
    }

    @Test("an issuingDistributionPoint for CA certificates only is read for the intermediate")
    func caOnly() throws {
        let pki = try TestPKI()
        let list = try Self.rootList(
            pki, entries: [.revoked(pki.intermediate, date: Self.revokedAt, reason: "cessationOfOperation")],
            extensions: ["issuingDistributionPoint = critical,@idp"], sections: "[idp]\nonlyCA = TRUE")
        #expect(try list.status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now).revocation?.reason == .init(code: 5))
        #expect(throws: CRLError.unsupported("a CRL for CA certificates only")) {
            try list.status(of: pki.leaf, issuer: pki.root, atEpochSeconds: Self.now)
        }
    }

    @Test("empty, garbage, truncated and trailing bytes are malformed, never a status")
    func malformed() throws {
        let pki = try TestPKI()
        let der = try TestCRL.make(issuer: pki.root, key: pki.rootKey)
        for bytes in [[], Array("<html>not found</html>".utf8), Array(der.dropLast(7)), der + [0x00]] {
            do {
                _ = try CertificateRevocationList(derEncoded: bytes).status(of: pki.intermediate, issuer: pki.root, atEpochSeconds: Self.now)
                Issue.record("accepted \(bytes.count) bytes")
            } catch {
                guard case .malformed = error else { Issue.record("\(error)"); continue }
            }
        }
    }
}

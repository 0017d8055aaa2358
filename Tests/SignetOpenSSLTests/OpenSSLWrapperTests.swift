import Foundation
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

@Suite("OpenSSL wrappers")
struct OpenSSLWrapperTests {
    /// The Apple library's test root (certs/testCA.der).
    static func testCA() throws -> X509Certificate {
        try X509Certificate(derEncoded: [UInt8](try Data(contentsOf: FixturePaths.appleLibraryVectors.appendingPathComponent("certs/testCA.der"))))
    }

    @Test("the built-in Apple Root CA - G3 has Apple's published SHA-256 fingerprint")
    func appleRootPinned() throws {
        let root = AppleRoots.appleRootCAG3
        #expect(root.sha256FingerprintHex
            == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(SHA256.hex(root.sha256Fingerprint) == AppleRoots.appleRootCAG3SHA256)
        // Byte-identical to the certificate shipped with the fixtures.
        let fixture = [UInt8](try Data(contentsOf: FixturePaths.appleReal.appendingPathComponent("AppleRootCA-G3.der")))
        #expect(root.derEncoded == fixture)
        #expect(root.subject.contains("CN=Apple Root CA - G3"))
        #expect(root.isCA)
        #expect(root.isSelfIssued)
        #expect(Int64(root.notBefore.timeIntervalSince1970) == 1_398_881_946)  // 2014-04-30T18:19:06Z (openssl x509 -startdate)
        #expect(Int64(root.notAfter.timeIntervalSince1970) == 2_187_800_346)  // 2039-04-30T18:19:06Z
        #expect(try root.publicKey.curve == .p384)
    }

    @Test("loadAll reads PEM bundles and single DER files")
    func loading() throws {
        let g3pem = try X509Certificate.loadAll(fromFile: FixturePaths.appleReal.appendingPathComponent("AppleRootCA-G3.pem").path)
        #expect(g3pem == [AppleRoots.appleRootCAG3])
        let bundle = AppleRoots.appleRootCAG3.pemEncoded + "\n" + (try Self.testCA().pemEncoded)
        let both = try X509Certificate.loadAll(pemOrDER: Array(bundle.utf8))
        #expect(both.count == 2)
        #expect(both[1] == (try Self.testCA()))
        #expect(try X509Certificate(pemEncoded: bundle) == AppleRoots.appleRootCAG3)
        #expect(throws: OpenSSLError.self) { try X509Certificate.loadAll(pemOrDER: Array("-----BEGIN nothing".utf8)) }
        #expect(throws: OpenSSLError.self) { try X509Certificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: OpenSSLError.self) { try X509Certificate(derEncoded: []) }
        #expect(throws: OpenSSLError.self) { try X509Certificate.loadAll(fromFile: "/nonexistent/roots.pem") }
    }

    @Test("strict base64 and base64url")
    func base64() throws {
        #expect(try Base64.decode("aGVsbG8=") == Array("hello".utf8))
        #expect(try Base64.decodeURL("aGVsbG8") == Array("hello".utf8))
        #expect(try Base64.decodeURL("") == [])
        #expect(try Base64.decodeURL("-_8") == [0xFB, 0xFF])
        #expect(try Base64.decode("+/8=") == [0xFB, 0xFF])
        for bad in ["aGVsbG8", "aGVsbG8==", "aGVs bG8=", "aGVsbG9=", "a===", "-_8="] {
            #expect(throws: Base64Error.self, "standard \(bad)") { try Base64.decode(bad) }
        }
        for bad in ["aGVsbG8=", "+/8", "aGVsbG9", "a", "aGVsbG8\n"] {
            #expect(throws: Base64Error.self, "url \(bad)") { try Base64.decodeURL(bad) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(try Base64.decode(Base64.encode(bytes)) == bytes)
            #expect(try Base64.decodeURL(Base64.encodeURL(bytes)) == bytes)
            _ = try? Base64.decodeURL(bytes)  // arbitrary input: throws or decodes, never traps
            _ = try? Base64.decode(bytes)
        }
    }

    @Test("hex reads back what SHA256.hex writes, in either case, and refuses anything else")
    func hexRoundTrip() {
        let bytes: [UInt8] = Array(0...255)
        #expect(SHA256.bytes(hex: SHA256.hex(bytes)) == bytes)
        #expect(SHA256.bytes(hex: SHA256.hex(bytes).uppercased()) == bytes)
        #expect(SHA256.bytes(hex: "") == [])
        for bad in ["a", "0g", "+f", "-0", " 0", "0x", "zz"] { #expect(SHA256.bytes(hex: bad) == nil, "\(bad)") }
    }

    @Test("SHA-256 known answer")
    func sha256() {
        #expect(SHA256.hex(SHA256.hash("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("a midstate finishes to the one-shot digest of prefix + separator + rest, across block boundaries, any number of times")
    func sha256Midstate() {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for prefixCount in [0, 1, 54, 55, 56, 62, 63, 64, 65, 127, 128, 200] {
            let prefix = Array(bytes.prefix(prefixCount))
            let midstate = prefix.withUnsafeBytes { SHA256.Midstate(prefix: $0, separator: UInt8(ascii: ".")) }
            #expect(midstate.prefixCount == prefixCount + 1)
            for restCount in [0, 1, 63, 64, 65, 99] {
                let rest = Array(bytes.suffix(restCount))
                let expected = SHA256.hash(prefix + [UInt8(ascii: ".")] + rest)
                #expect(rest.withUnsafeBytes { midstate.finish($0) } == expected, "prefix \(prefixCount), rest \(restCount)")
                #expect(rest.withUnsafeBytes { midstate.finish($0) } == expected, "finishing twice")
            }
        }
        var stream = SHA256.Stream()
        for piece in ["a", "", "bc"] { stream.update(piece) }
        #expect(SHA256.hex(stream.finish()) == SHA256.hex(SHA256.hash("abc")))
    }

    @Test("EC keys: PEM round trip, ES256 sign and verify")
    func keys() throws {
        let key = try ECPrivateKey(generating: .p256)
        let restored = try ECPrivateKey(pemEncoded: key.pemEncoded)
        #expect(restored.curve == .p256)
        let message = Array("header.payload".utf8)
        let signature = try restored.signES256(message)
        #expect(signature.count == 64)
        #expect(try key.publicKey.verifyES256(rawSignature: signature, message: message))
        #expect(try !key.publicKey.verifyES256(rawSignature: signature, message: message + [0]))
        let spki = try key.publicKey.subjectPublicKeyInfoDER
        #expect(try ECPublicKey(subjectPublicKeyInfoDER: spki).verifyES256(rawSignature: signature, message: message))
        #expect(try ECPrivateKey(generating: .p384).signES256(message).count == 96)
        #expect(throws: OpenSSLError.self) { try ECPrivateKey(pemEncoded: "not a key") }
    }

    @Test("chain verifier maps OpenSSL errors to precise kinds")
    func chainErrors() throws {
        let pki = try TestPKI(leafNotBefore: Date(timeIntervalSince1970: 1_700_000_000), leafNotAfter: Date(timeIntervalSince1970: 1_800_000_000))
        let verifier = CertificateChainVerifier(trustStore: try TrustStore(roots: [pki.root]))
        let chain = try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], atEpochSeconds: 1_750_000_000)
        #expect(chain.certificates.count == 3)
        #expect(chain.certificates[2] == pki.root)
        #expect(chain.validFromEpochSeconds == 1_700_000_000 && chain.validUntilEpochSeconds == 1_800_000_000)
        func kind(_ body: () throws(ChainVerificationError) -> VerifiedChain) -> ChainVerificationError.Kind? {
            do { _ = try body(); return nil } catch { return error.kind }
        }
        #expect(kind { () throws(ChainVerificationError) in try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], atEpochSeconds: 1_900_000_000) } == .expired)
        #expect(kind { () throws(ChainVerificationError) in try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], atEpochSeconds: 1_600_000_000) } == .notYetValid)
        #expect(kind { () throws(ChainVerificationError) in try verifier.verify(leaf: pki.leaf, intermediates: [], atEpochSeconds: 1_750_000_000) } == .unableToGetIssuer)
        let notCA = try pki.issueIntermediate(key: pki.intermediateKey, isCA: false)
        #expect(kind { () throws(ChainVerificationError) in try verifier.verify(leaf: pki.leaf, intermediates: [notCA], atEpochSeconds: 1_750_000_000) } == .invalidCA)
        let other = try TestPKI()
        let forged = try CertificateBuilder(
            subjectCommonName: "x", serialNumber: 9, notBefore: TestPKI.defaultNotBefore, notAfter: TestPKI.defaultNotAfter,
            publicKey: other.leafKey.publicKey, isCA: false, includeKeyIdentifiers: false
        ).sign(issuer: pki.intermediate, issuerKey: other.intermediateKey)
        #expect(kind { () throws(ChainVerificationError) in try verifier.verify(leaf: forged, intermediates: [pki.intermediate], atEpochSeconds: 1_750_000_000) } == .badSignature)
    }

    @Test("certificate builder output carries what was asked for")
    func builder() throws {
        let pki = try TestPKI()
        #expect(pki.leaf.hasExtension(oid: TestPKI.leafMarkerOID))
        #expect(!pki.leaf.hasExtension(oid: TestPKI.intermediateMarkerOID))
        #expect(pki.intermediate.hasExtension(oid: TestPKI.intermediateMarkerOID))
        #expect(pki.intermediate.isCA && pki.root.isCA && !pki.leaf.isCA)
        #expect(pki.leaf.keyUsage == .digitalSignature)
        #expect(pki.leaf.version == 3)
        #expect(try pki.leaf.publicKey.curve == .p256)
        #expect(try pki.root.publicKey.curve == .p384)
        #expect(pki.leaf.notBefore == TestPKI.defaultNotBefore && pki.leaf.notAfter == TestPKI.defaultNotAfter)
        #expect(pki.leaf.issuer == pki.intermediate.subject)
        #expect(pki.rootPEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(try X509Certificate(pemEncoded: pki.rootPEM) == pki.root)
    }
}

import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import Testing

/// Forged and broken inputs built with a private Apple-shaped PKI. Each case asserts the
/// exact reason code, and runs twice: with the caches on and off (a cache must never
/// change a verdict).
@Suite("Adversarial inputs")
struct AdversarialTests {
    static let now = Fixture.fixedNow
    static let signedDate = Int64(now.timeIntervalSince1970 * 1000) - 3_600_000  // one hour before "now"
    static let bundleId = "com.example.signet"

    /// One PKI for the whole suite (key generation is the slow part).
    static let pki: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()
    /// A second PKI with the same subject names but different keys.
    static let otherPKI: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()

    /// `keyTable`: cached, and the fixtures' leaf key already verifies through its
    /// precomputed table (`P256KeyTable`) when the test's input arrives, so every forgery
    /// is judged on that path too.
    enum CacheMode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case cached, uncached, keyTable
        var testDescription: String { rawValue }
    }

    static func verifier(
        _ mode: CacheMode, environment: AppStoreEnvironment? = .sandbox, bundleId: String? = AdversarialTests.bundleId,
        appAppleId: Int64? = 4242, roots: [X509Certificate]? = nil
    ) throws -> AppStoreVerifier {
        let capacity = mode == .uncached ? 0 : 256
        var configuration = VerifierConfiguration(
            roots: roots ?? [pki.root], environment: environment, bundleId: bundleId, appAppleId: appAppleId,
            chainCacheCapacity: capacity, headerCacheCapacity: capacity, now: { AdversarialTests.now })
        guard mode == .keyTable else { return try makeVerifier(configuration) }
        configuration.keyTableThreshold = 1
        let verifier = try makeVerifier(configuration)
        // The chain step trusts the leaf (claims may still fail for this configuration).
        let warm = try validNotification()
        _ = try? verifier.verifyNotification(warm)
        if roots == nil { #expect(verifier.usesKeyTable(forHeaderOf: warm)) }
        return verifier
    }

    // MARK: payloads

    static func transactionJSON(bundleId: String = AdversarialTests.bundleId, environment: String = "Sandbox", signedDate: Int64 = signedDate) -> String {
        #"{"transactionId":"2000000001","originalTransactionId":"2000000000","bundleId":"\#(bundleId)","productId":"pro.monthly","environment":"\#(environment)","signedDate":\#(signedDate),"type":"Auto-Renewable Subscription","purchaseDate":\#(signedDate - 1000),"expiresDate":\#(signedDate + 2_592_000_000)}"#
    }

    static func renewalJSON(environment: String = "Sandbox", signedDate: Int64 = signedDate) -> String {
        #"{"originalTransactionId":"2000000000","autoRenewProductId":"pro.monthly","productId":"pro.monthly","autoRenewStatus":1,"environment":"\#(environment)","signedDate":\#(signedDate)}"#
    }

    static func notificationJSON(
        bundleId: String? = AdversarialTests.bundleId, environment: String? = "Sandbox", appAppleId: Int64? = 4242,
        signedDate: Int64? = signedDate, transaction: String? = nil, renewal: String? = nil
    ) -> String {
        var data: [String] = []
        if let appAppleId { data.append(#""appAppleId":\#(appAppleId)"#) }
        if let bundleId { data.append(#""bundleId":"\#(bundleId)""#) }
        if let environment { data.append(#""environment":"\#(environment)""#) }
        if let transaction { data.append(#""signedTransactionInfo":"\#(transaction)""#) }
        if let renewal { data.append(#""signedRenewalInfo":"\#(renewal)""#) }
        var top = [#""notificationType":"DID_RENEW""#, #""notificationUUID":"6b1d2c3e-0000-4000-8000-000000000001""#, #""version":"2.0""#]
        if let signedDate { top.append(#""signedDate":\#(signedDate)"#) }
        top.append(#""data":{\#(data.joined(separator: ","))}"#)
        return "{" + top.joined(separator: ",") + "}"
    }

    static func signed(_ json: String, _ configure: (inout JWSSigner) -> Void = { _ in }) throws -> String {
        var signer = pki.signer
        configure(&signer)
        return try signer.sign(json: json)
    }

    /// A complete, valid notification with nested transaction and renewal info.
    static func validNotification() throws -> String {
        try signed(notificationJSON(transaction: signed(transactionJSON()), renewal: signed(renewalJSON())))
    }

    // MARK: baseline

    @Test("baseline: a well-formed notification with nested JWS verifies", arguments: CacheMode.allCases)
    func baseline(mode: CacheMode) throws {
        let verified = try Self.verifier(mode).verifyNotification(Self.validNotification())
        #expect(verified.transaction?.payload.transactionId == "2000000001")
        #expect(verified.renewalInfo?.payload.autoRenewProductId == "pro.monthly")
        #expect(verified.effectiveDateSource == .signedDate)
    }

    // MARK: alg and header

    @Test("alg other than exactly ES256 → unsupported_algorithm", arguments: CacheMode.allCases)
    func algorithms(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let json = Self.notificationJSON()
        for alg in ["none", "HS256", "RS256", "ES384", "es256", "ES256 ", "EdDSA", ""] {
            let jws = try Self.signed(json) { $0.alg = alg }
            expectRejection(.unsupportedAlgorithm, "alg \(alg)") { try verifier.verifyNotification(jws) }
        }
        // ES384 genuinely signed with a P-384 key: still refused on alg alone.
        let p384 = try ECPrivateKey(generating: .p384)
        let es384 = try Self.signed(json) { $0.alg = "ES384"; $0.key = p384 }
        expectRejection(.unsupportedAlgorithm) { try verifier.verifyNotification(es384) }
        // alg missing, alg not a string, "alg":"none" with an empty signature.
        let missing = try Self.signed(json) { $0.alg = nil }
        expectRejection(.unsupportedAlgorithm, "alg missing") { try verifier.verifyNotification(missing) }
        let numeric = try Self.signed(json) { $0.alg = nil; $0.extraHeaderMembers = [#""alg":256"#] }
        expectRejection(.unsupportedAlgorithm, "alg number") { try verifier.verifyNotification(numeric) }
        let unsigned = segments(try Self.signed(json) { $0.alg = "none" })
        expectRejection(.unsupportedAlgorithm, "alg none, no signature") { try verifier.verifyNotification(unsigned[0] + "." + unsigned[1] + ".") }
    }

    @Test("crit in the header → unsupported_header", arguments: CacheMode.allCases)
    func crit(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let jws = try Self.signed(Self.notificationJSON()) { $0.extraHeaderMembers = [#""crit":["exp"]"#, #""exp":1"#] }
        expectRejection(.unsupportedHeader) { try verifier.verifyNotification(jws) }
        let b64 = try Self.signed(Self.notificationJSON()) { $0.extraHeaderMembers = [#""b64":false"#, #""crit":["b64"]"#] }
        expectRejection(.unsupportedHeader) { try verifier.verifyNotification(b64) }
    }

    @Test("header not JSON / not an object → malformed_jws", arguments: CacheMode.allCases)
    func headerNotJSON(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        for header in ["not json", #"["ES256"]"#, #""ES256""#, "{", ""] {
            let jws = try Self.signed(Self.notificationJSON()) { $0.headerOverride = Array(header.utf8) }
            expectRejection(.malformedJWS, "header \(header)") { try verifier.verifyNotification(jws) }
        }
    }

    // MARK: x5c

    @Test("x5c missing, wrong count, not strings, bad base64, not certificates → invalid_x5c", arguments: CacheMode.allCases)
    func x5cShapes(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let json = Self.notificationJSON()
        let pki = Self.pki
        let b64 = pki.chain.map { Base64.encode($0.derEncoded) }
        let cases: [(String, (inout JWSSigner) -> Void)] = [
            ("missing", { $0.omitX5C = true }),
            ("2 certificates", { $0.chain = [pki.leaf, pki.intermediate] }),
            ("4 certificates", { $0.chain = [pki.leaf, pki.intermediate, pki.root, pki.root] }),
            ("1 certificate", { $0.chain = [pki.leaf] }),
            ("empty", { $0.chain = [] }),
            ("garbage base64", { $0.x5cStrings = ["!!!not base64!!!", b64[1], b64[2]] }),
            ("base64 but not a certificate", { $0.x5cStrings = [b64[0], "AAAAAAAA", b64[2]] }),
            ("root not a certificate", { $0.x5cStrings = [b64[0], b64[1], Base64.encode(Array("hello".utf8))] }),
            ("whitespace inside base64", { $0.x5cStrings = [String(b64[0].prefix(10)) + "\n" + b64[0].dropFirst(10), b64[1], b64[2]] }),
            ("certificate with trailing bytes", { $0.x5cStrings = [Base64.encode(pki.leaf.derEncoded + [0]), b64[1], b64[2]] }),
            ("not an array", { $0.omitX5C = true; $0.extraHeaderMembers = [#""x5c":"\#(b64[0])""#] }),
            ("array of numbers", { $0.omitX5C = true; $0.extraHeaderMembers = [#""x5c":[1,2,3]"#] }),
        ]
        for (name, configure) in cases {
            let jws = try Self.signed(json, configure)
            expectRejection(.invalidX5C, "x5c \(name)") { try verifier.verifyNotification(jws) }
        }
    }

    @Test("x5c[2] is ignored: any parseable certificate there still verifies (as in Apple's library)", arguments: CacheMode.allCases)
    func x5cRootIgnored(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let jws = try Self.signed(Self.notificationJSON()) {
            $0.chain = [Self.pki.leaf, Self.pki.intermediate, AppleRoots.appleRootCAG3]
        }
        #expect(throws: Never.self) { try verifier.verifyNotification(jws) }
    }

    // MARK: chain

    @Test("a chain to an unconfigured root → invalid_certificate_chain", arguments: CacheMode.allCases)
    func untrustedRoot(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let jws = try Self.otherPKI.signer.sign(json: Self.notificationJSON())
        let rejection = expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(jws) }
        #expect(rejection?.detail.contains("configured root") == true)
        // Apple's real root does not help either.
        let apple = try Self.verifier(mode, roots: [AppleRoots.appleRootCAG3])
        expectRejection(.invalidCertificateChain) { try apple.verifyNotification(Self.validNotification()) }
    }

    @Test("self-signed leaf → invalid_certificate_chain", arguments: CacheMode.allCases)
    func selfSignedLeaf(mode: CacheMode) throws {
        let key = try ECPrivateKey(generating: .p256)
        let leaf = try CertificateBuilder(
            subjectCommonName: "Signet Fixtures Test Receipt Signing", serialNumber: 7, notBefore: TestPKI.defaultNotBefore,
            notAfter: TestPKI.defaultNotAfter, publicKey: key.publicKey, isCA: false, keyUsage: .digitalSignature,
            customExtensions: [.init(oid: TestPKI.leafMarkerOID)]
        ).sign(issuer: nil, issuerKey: key)
        let jws = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [leaf, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(jws) }
    }

    @Test("leaf issued by another intermediate of the same name → invalid_certificate_chain", arguments: CacheMode.allCases)
    func leafFromWrongIntermediate(mode: CacheMode) throws {
        // otherPKI's leaf presented with our intermediate: the names match, but its
        // authorityKeyIdentifier does not, so OpenSSL finds no issuer.
        let jws = try Self.signed(Self.notificationJSON()) {
            $0.key = Self.otherPKI.leafKey
            $0.chain = [Self.otherPKI.leaf, Self.pki.intermediate, Self.pki.root]
        }
        let rejection = expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(jws) }
        #expect(rejection?.detail.contains("unableToGetIssuer") == true, "\(rejection?.detail ?? "")")

        // Without key identifiers the name alone selects our intermediate, and the
        // leaf's signature (made by the other intermediate's key) fails.
        let key = try ECPrivateKey(generating: .p256)
        let forged = try CertificateBuilder(
            subjectCommonName: "Signet Fixtures Test Receipt Signing", serialNumber: 0x4001, notBefore: TestPKI.defaultNotBefore,
            notAfter: TestPKI.defaultNotAfter, publicKey: key.publicKey, isCA: false, keyUsage: .digitalSignature,
            includeKeyIdentifiers: false, customExtensions: [.init(oid: TestPKI.leafMarkerOID)]
        ).sign(issuer: Self.pki.intermediate, issuerKey: Self.otherPKI.intermediateKey)
        let badSignature = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [forged, Self.pki.intermediate, Self.pki.root] }
        let second = expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(badSignature) }
        #expect(second?.detail.contains("badSignature") == true, "\(second?.detail ?? "")")
    }

    @Test("leaf without 1.2.840.113635.100.6.11.1 → missing_apple_oid", arguments: CacheMode.allCases)
    func leafWithoutOID(mode: CacheMode) throws {
        let key = try ECPrivateKey(generating: .p256)
        let leaf = try Self.pki.issueLeaf(key: key, includeMarkerOID: false)
        let jws = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [leaf, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.missingAppleOID) { try Self.verifier(mode).verifyNotification(jws) }
    }

    @Test("intermediate without 1.2.840.113635.100.6.2.1 → missing_apple_oid", arguments: CacheMode.allCases)
    func intermediateWithoutOID(mode: CacheMode) throws {
        // Same name and key as the real intermediate, so the genuine leaf chains through it.
        let intermediate = try Self.pki.issueIntermediate(key: Self.pki.intermediateKey, includeMarkerOID: false)
        let jws = try Self.signed(Self.notificationJSON()) { $0.chain = [Self.pki.leaf, intermediate, Self.pki.root] }
        expectRejection(.missingAppleOID) { try Self.verifier(mode).verifyNotification(jws) }
    }

    @Test("intermediate that is not a CA → invalid_certificate_chain", arguments: CacheMode.allCases)
    func intermediateNotCA(mode: CacheMode) throws {
        let intermediate = try Self.pki.issueIntermediate(key: Self.pki.intermediateKey, isCA: false)
        let jws = try Self.signed(Self.notificationJSON()) { $0.chain = [Self.pki.leaf, intermediate, Self.pki.root] }
        let rejection = expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(jws) }
        #expect(rejection?.detail.contains("invalidCA") == true)
    }

    @Test("x5c[1] is the root or the leaf again → invalid_certificate_chain", arguments: CacheMode.allCases)
    func wrongIntermediateSlot(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let rootAsIntermediate = try Self.signed(Self.notificationJSON()) { $0.chain = [Self.pki.leaf, Self.pki.root, Self.pki.root] }
        expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(rootAsIntermediate) }
        let leafTwice = try Self.signed(Self.notificationJSON()) { $0.chain = [Self.pki.leaf, Self.pki.leaf, Self.pki.root] }
        expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(leafTwice) }
    }

    @Test("leaf whose keyUsage excludes digitalSignature → invalid_certificate_chain", arguments: CacheMode.allCases)
    func leafKeyUsage(mode: CacheMode) throws {
        let key = try ECPrivateKey(generating: .p256)
        let leaf = try Self.pki.issueLeaf(key: key, keyUsage: .keyAgreement)
        let jws = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [leaf, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(jws) }
    }

    @Test("leaf with a P-384 key cannot make an ES256 signature → invalid_signature (96 bytes)", arguments: CacheMode.allCases)
    func leafOnP384(mode: CacheMode) throws {
        let key = try ECPrivateKey(generating: .p384)
        let leaf = try Self.pki.issueLeaf(key: key)
        let jws = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [leaf, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.invalidSignature) { try Self.verifier(mode).verifyNotification(jws) }
        // Even a 64-byte signature is refused: the key is not P-256.
        let truncated = try Self.signed(Self.notificationJSON()) {
            $0.key = key; $0.chain = [leaf, Self.pki.intermediate, Self.pki.root]; $0.transformSignature = { Array($0.prefix(64)) }
        }
        expectRejection(.invalidCertificateChain) { try Self.verifier(mode).verifyNotification(truncated) }
    }

    // MARK: validity at signedDate

    @Test("leaf expired at signedDate / not yet valid at signedDate → certificate_not_valid_at_signed_date", arguments: CacheMode.allCases)
    func leafValidity(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let key = try ECPrivateKey(generating: .p256)
        let expired = try Self.pki.issueLeaf(
            key: key, notBefore: TestPKI.defaultNotBefore, notAfter: Date(timeIntervalSince1970: 1_735_689_600))  // ends 2025-01-01
        let jws = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [expired, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.certificateNotValidAtSignedDate, "expired") { try verifier.verifyNotification(jws) }

        let future = try Self.pki.issueLeaf(
            key: key, notBefore: Date(timeIntervalSince1970: 1_780_000_000), notAfter: TestPKI.defaultNotAfter, serialNumber: 0x1002)
        let early = try Self.signed(Self.notificationJSON()) { $0.key = key; $0.chain = [future, Self.pki.intermediate, Self.pki.root] }
        expectRejection(.certificateNotValidAtSignedDate, "not yet valid") { try verifier.verifyNotification(early) }

        // The same expired leaf verifies when the payload was signed while it was valid.
        let old = try Self.signed(Self.notificationJSON(signedDate: 1_700_000_000_000)) {
            $0.key = key; $0.chain = [expired, Self.pki.intermediate, Self.pki.root]
        }
        #expect(throws: Never.self) { try verifier.verifyNotification(old) }
    }

    @Test("""
        signedDate beyond maxFutureSkew → signed_date_in_future. Stricter than Apple, whose library \
        accepts any date: a future signedDate lets a payload pick a validation instant nobody has reached, \
        so it is either forged or a clock is broken.
        """, arguments: CacheMode.allCases)
    func futureSignedDate(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let nowMs = Int64(Self.now.timeIntervalSince1970 * 1000)
        let farFuture = try Self.signed(Self.notificationJSON(signedDate: nowMs + 86_400_000))
        expectRejection(.signedDateInFuture) { try verifier.verifyNotification(farFuture) }
        let justOver = try Self.signed(Self.notificationJSON(signedDate: nowMs + 300_001))
        expectRejection(.signedDateInFuture) { try verifier.verifyNotification(justOver) }
        let withinSkew = try Self.signed(Self.notificationJSON(signedDate: nowMs + 60_000))
        #expect(throws: Never.self) { try verifier.verifyNotification(withinSkew) }
        let futureTransaction = try Self.signed(Self.transactionJSON(signedDate: nowMs + 86_400_000))
        expectRejection(.signedDateInFuture) { try verifier.verifyTransaction(futureTransaction) }
    }

    // MARK: signature

    @Test("signature problems → invalid_signature", arguments: CacheMode.allCases)
    func signatures(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let json = Self.notificationJSON()
        // Signed over one payload, presented with another.
        let original = try Self.signed(json)
        let swapped = replacingPayload(of: original, with: Array(Self.notificationJSON(bundleId: "com.example.signet", appAppleId: 1).utf8))
        expectRejection(.invalidSignature, "payload swapped") { try verifier.verifyNotification(swapped) }
        let transforms: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
            ("63 bytes", { @Sendable s in Array(s.prefix(63)) }),
            ("65 bytes", { @Sendable s in s + [0] }),
            ("empty", { @Sendable _ in [] }),
            ("all zero (r = s = 0)", { @Sendable _ in [UInt8](repeating: 0, count: 64) }),
            ("r and s swapped", { @Sendable s in Array(s[32...] + s[..<32]) }),
            ("bit flipped", { @Sendable s in var s = s; s[40] ^= 0x01; return s }),
            ("all 0xFF (r, s ≥ n)", { @Sendable _ in [UInt8](repeating: 0xFF, count: 64) }),
        ]
        for (name, transform) in transforms {
            let jws = try Self.signed(json) { $0.transformSignature = transform }
            expectRejection(.invalidSignature, "signature \(name)") { try verifier.verifyNotification(jws) }
        }
        // A DER-encoded ECDSA signature (what X.509 uses) instead of raw r‖s.
        let parts = segments(original)
        let der = try Self.pki.leafKey.signDER(digest: SHA256.hash(parts[0] + "." + parts[1]))
        let derJWS = parts[0] + "." + parts[1] + "." + Base64.encodeURL(der)
        let rejection = expectRejection(.invalidSignature, "DER signature") { try verifier.verifyNotification(derJWS) }
        #expect(rejection?.detail.contains("DER") == true)
        // Signed by a key that is not the leaf's.
        let stranger = try ECPrivateKey(generating: .p256)
        let wrongKey = try Self.signed(json) { $0.key = stranger }
        expectRejection(.invalidSignature, "wrong key") { try verifier.verifyNotification(wrongKey) }
    }

    @Test("jwk/jku/kid/x5u injection cannot supply the key", arguments: CacheMode.allCases)
    func keyInjection(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let attacker = try ECPrivateKey(generating: .p256)
        let point = try attacker.publicKey.uncompressedPoint
        let jwk = #""jwk":{"kty":"EC","crv":"P-256","x":"\#(Base64.encodeURL(point[1...32]))","y":"\#(Base64.encodeURL(point[33...]))"}"#
        let members = [jwk, #""kid":"attacker""#, #""jku":"https://attacker.example/jwks""#, #""x5u":"https://attacker.example/chain.pem""#]
        // Genuine x5c, attacker's signature: the x5c leaf key decides.
        let injected = try Self.signed(Self.notificationJSON()) { $0.key = attacker; $0.extraHeaderMembers = members }
        expectRejection(.invalidSignature) { try verifier.verifyNotification(injected) }
        // Attacker's whole PKI in x5c: chain does not reach a configured root.
        let ownChain = try Self.otherPKI.signer.sign(json: Self.notificationJSON())
        let ownParts = segments(ownChain)
        var signer = Self.otherPKI.signer
        signer.extraHeaderMembers = members
        _ = ownParts
        expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(signer.sign(json: Self.notificationJSON())) }
        // The same extra members on a genuine signature are harmless and ignored.
        let harmless = try Self.signed(Self.notificationJSON()) { $0.extraHeaderMembers = members + [#""typ":"JWT""#] }
        #expect(throws: Never.self) { try verifier.verifyNotification(harmless) }
    }

    // MARK: payload

    @Test("payload not a JSON object → malformed_jws; wrong field types → malformed_payload", arguments: CacheMode.allCases)
    func payloads(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        for payload in ["hello", "[1,2,3]", "\"string\"", "", "{\"signedDate\":", "{} trailing", "{\"a\":1,}"] {
            let jws = try Self.signed(payload)
            expectRejection(.malformedJWS, "payload \(payload)") { try verifier.verifyNotification(jws) }
        }
        let wrongType = try Self.signed(#"{"notificationType":"TEST","signedDate":"yesterday"}"#)
        expectRejection(.malformedPayload, "signedDate string") { try verifier.verifyNotification(wrongType) }
        let dataArray = try Self.signed(#"{"notificationType":"TEST","data":[]}"#)
        expectRejection(.malformedPayload, "data array") { try verifier.verifyNotification(dataArray) }
    }

    // MARK: framing

    @Test("segment count, base64url strictness, padding, whitespace → malformed_jws", arguments: CacheMode.allCases)
    func framing(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let jws = try Self.validNotification()
        let parts = segments(jws)
        let cases: [(String, String)] = [
            ("2 segments", parts[0] + "." + parts[1]),
            ("4 segments", jws + "." + parts[2]),
            ("empty", ""),
            ("dots only", ".."),
            ("padding on the signature", jws + "=="),
            ("padding on the payload", parts[0] + "." + parts[1] + "=." + parts[2]),
            ("standard-base64 '+' in the payload", parts[0] + "." + "+" + parts[1].dropFirst() + "." + parts[2]),
            ("invalid character in the header", "*" + parts[0].dropFirst() + "." + parts[1] + "." + parts[2]),
            ("trailing newline", jws + "\n"),
            ("leading space", " " + jws),
            ("truncated by one character", String(jws.dropLast())),
            ("non-canonical last character", String(jws.dropLast()) + Self.noncanonical(jws.last!)),
        ]
        for (name, input) in cases {
            expectRejection(.malformedJWS, "\(name)") { try verifier.verifyNotification(input) }
        }
        // Oversized input is refused before any parsing.
        let huge = String(repeating: "A", count: AppStoreVerifier.maximumJWSBytes + 1)
        expectRejection(.malformedJWS, "oversized") { try verifier.verifyNotification(huge) }
    }

    /// A character with the same top 4 bits (so the same decoded byte) but non-zero unused bits.
    static func noncanonical(_ last: Character) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        return String(alphabet[index | 0x01 == index ? index - 1 + 2 : index | 0x01])
    }

    @Test("arbitrary bytes never crash: always a RecordRejection", arguments: CacheMode.allCases)
    func fuzz(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let valid = Array(try Self.validNotification().utf8)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<600 {
            var input: [UInt8]
            switch round % 3 {
            case 0:  // random bytes, sometimes with dots
                input = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                    Bool.random(using: &generator) ? UInt8(ascii: ".") : UInt8.random(in: 0...255, using: &generator)
                }
            case 1:  // a valid JWS with a few random byte changes
                input = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    input[Int.random(in: 0..<input.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            default:  // a valid JWS cut at a random place
                input = Array(valid.prefix(Int.random(in: 0..<valid.count, using: &generator)))
            }
            do {
                _ = try verifier.verifyNotification(input)
                // A random change can land in a spot that does not alter meaning only by chance; it must then still verify.
            } catch {
                #expect(!error.detail.isEmpty)
            }
        }
    }

    // MARK: nested JWS

    @Test("nested transaction or renewal info forged or wrong → nested_jws_invalid with the inner reason", arguments: CacheMode.allCases)
    func nested(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let stranger = try ECPrivateKey(generating: .p256)
        let goodTransaction = try Self.signed(Self.transactionJSON())
        let goodRenewal = try Self.signed(Self.renewalJSON())
        let cases: [(String, String?, String?, String)] = [
            ("transaction signed by another key", try Self.signed(Self.transactionJSON()) { $0.key = stranger }, goodRenewal, "invalid_signature"),
            ("renewal signed by another key", goodTransaction, try Self.signed(Self.renewalJSON()) { $0.key = stranger }, "invalid_signature"),
            ("transaction for another bundle", try Self.signed(Self.transactionJSON(bundleId: "com.evil.app")), goodRenewal, "bundle_id_mismatch"),
            ("renewal from Production", goodTransaction, try Self.signed(Self.renewalJSON(environment: "Production")), "environment_mismatch"),
            ("transaction from an untrusted PKI", try Self.otherPKI.signer.sign(json: Self.transactionJSON()), goodRenewal, "invalid_certificate_chain"),
            ("transaction not a JWS", "garbage", goodRenewal, "malformed_jws"),
            ("transaction tampered", replacingPayload(of: goodTransaction, with: Array(Self.transactionJSON(bundleId: "com.example.signet.x").utf8)), nil, "invalid_signature"),
            ("transaction with alg none", try Self.signed(Self.transactionJSON()) { $0.alg = "none" }, nil, "unsupported_algorithm"),
        ]
        for (name, transaction, renewal, inner) in cases {
            let jws = try Self.signed(Self.notificationJSON(transaction: transaction, renewal: renewal))
            let rejection = expectRejection(.nestedJWSInvalid, "\(name)") { try verifier.verifyNotification(jws) }
            #expect(rejection?.detail.contains(inner) == true, "\(name): \(rejection?.detail ?? "")")
        }
    }

    @Test("a notification without signedDate is validated at its nested transaction's date", arguments: CacheMode.allCases)
    func noSignedDate(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        // The leaf expired in 2025; the transaction was signed in 2023 while it was valid.
        let key = try ECPrivateKey(generating: .p256)
        let leaf = try Self.pki.issueLeaf(key: key, notAfter: Date(timeIntervalSince1970: 1_735_689_600), serialNumber: 0x3001)
        let chain = [leaf, Self.pki.intermediate, Self.pki.root]
        let transactionDate: Int64 = 1_690_000_000_000
        let transaction = try Self.signed(Self.transactionJSON(signedDate: transactionDate)) { $0.key = key; $0.chain = chain }
        let renewal = try Self.signed(Self.renewalJSON(signedDate: transactionDate + 5)) { $0.key = key; $0.chain = chain }
        let jws = try Self.signed(Self.notificationJSON(signedDate: nil, transaction: transaction, renewal: renewal)) {
            $0.key = key; $0.chain = chain
        }
        let verified = try verifier.verifyNotification(jws)
        #expect(verified.effectiveDateSource == .nestedTransactionSignedDate)
        #expect(AppleTimestamp(verified.effectiveDate)?.millisecondsSince1970 == transactionDate)
        // Only renewal info: its date is used.
        let renewalOnly = try Self.signed(Self.notificationJSON(signedDate: nil, renewal: renewal)) { $0.key = key; $0.chain = chain }
        #expect(try verifier.verifyNotification(renewalOnly).effectiveDateSource == .nestedRenewalInfoSignedDate)
        // Neither: the current time, where this leaf has expired.
        let bare = try Self.signed(Self.notificationJSON(signedDate: nil)) { $0.key = key; $0.chain = chain }
        expectRejection(.certificateNotValidAtSignedDate) { try verifier.verifyNotification(bare) }
        // Neither, with a valid leaf: verifies at the current time.
        let bareValid = try Self.signed(Self.notificationJSON(signedDate: nil))
        #expect(try verifier.verifyNotification(bareValid).effectiveDateSource == .currentTime)
    }

    // MARK: claims

    @Test("claims: environment, bundleId, appAppleId", arguments: CacheMode.allCases)
    func claims(mode: CacheMode) throws {
        let sandbox = try Self.verifier(mode)
        expectRejection(.environmentMismatch) { try sandbox.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production"))) }
        expectRejection(.environmentMismatch, "environment absent") { try sandbox.verifyNotification(Self.signed(Self.notificationJSON(environment: nil))) }
        expectRejection(.bundleIdMismatch) { try sandbox.verifyNotification(Self.signed(Self.notificationJSON(bundleId: "com.example.other"))) }
        expectRejection(.bundleIdMismatch, "bundleId absent") { try sandbox.verifyNotification(Self.signed(Self.notificationJSON(bundleId: nil))) }
        // Sandbox: appAppleId is not compared (Apple omits it there).
        #expect(throws: Never.self) { try sandbox.verifyNotification(Self.signed(Self.notificationJSON(appAppleId: 1))) }

        let production = try Self.verifier(mode, environment: .production, appAppleId: 4242)
        #expect(throws: Never.self) { try production.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production"))) }
        expectRejection(.appAppleIdMismatch) {
            try production.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production", appAppleId: 4243)))
        }
        expectRejection(.appAppleIdMismatch, "appAppleId absent") {
            try production.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production", appAppleId: nil)))
        }
        // Nothing configured: every claim passes.
        let open = try Self.verifier(mode, environment: nil, bundleId: nil, appAppleId: nil)
        #expect(throws: Never.self) { try open.verifyNotification(Self.signed(Self.notificationJSON(bundleId: "any", environment: "Production"))) }
        // Transactions: bundleId then environment; renewal info: environment only.
        expectRejection(.bundleIdMismatch) { try sandbox.verifyTransaction(Self.signed(Self.transactionJSON(bundleId: "x"))) }
        expectRejection(.environmentMismatch) { try sandbox.verifyTransaction(Self.signed(Self.transactionJSON(environment: "Production"))) }
        expectRejection(.environmentMismatch) { try sandbox.verifyRenewalInfo(Self.signed(Self.renewalJSON(environment: "Production"))) }
    }

    @Test("both environments: each payload by its own environment's rules; others still refused", arguments: CacheMode.allCases)
    func bothEnvironments(mode: CacheMode) throws {
        let capacity = mode == .uncached ? 0 : 256
        let both = try makeVerifier(VerifierConfiguration(
            roots: [Self.pki.root], environments: [.production, .sandbox], bundleId: Self.bundleId, appAppleId: 4242,
            chainCacheCapacity: capacity, headerCacheCapacity: capacity, now: { AdversarialTests.now }))
        #expect(throws: Never.self) { try both.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production"))) }
        #expect(throws: Never.self) { try both.verifyNotification(Self.signed(Self.notificationJSON(environment: "Sandbox", appAppleId: nil))) }
        #expect(throws: Never.self) { try both.verifyTransaction(Self.signed(Self.transactionJSON(environment: "Production"))) }
        #expect(throws: Never.self) { try both.verifyTransaction(Self.signed(Self.transactionJSON(environment: "Sandbox"))) }
        // Production's rule still holds for a Production payload: the app's Apple id.
        expectRejection(.appAppleIdMismatch) {
            try both.verifyNotification(Self.signed(Self.notificationJSON(environment: "Production", appAppleId: 4243)))
        }
        expectRejection(.environmentMismatch, "environment absent") { try both.verifyNotification(Self.signed(Self.notificationJSON(environment: nil))) }
        expectRejection(.environmentMismatch) { try both.verifyNotification(Self.signed(Self.notificationJSON(environment: "Xcode"))) }
        // Accepting Production still needs the app's Apple id.
        #expect(throws: VerifierConfigurationError.self) {
            try AppStoreVerifier(configuration: VerifierConfiguration(roots: [Self.pki.root], environments: [.production, .sandbox]))
        }
    }

    @Test("summary, externalPurchaseToken and appData are claim sources in Apple's order", arguments: CacheMode.allCases)
    func claimSources(mode: CacheMode) throws {
        let verifier = try Self.verifier(mode)
        let date = Self.signedDate
        let summary = #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","signedDate":\#(date),"summary":{"environment":"Sandbox","appAppleId":4242,"bundleId":"com.example.signet","productId":"p"}}"#
        #expect(throws: Never.self) { try verifier.verifyNotification(Self.signed(summary)) }
        // An external purchase token without the SANDBOX prefix is Production.
        let token = #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","signedDate":\#(date),"externalPurchaseToken":{"externalPurchaseId":"b2158121","appAppleId":4242,"bundleId":"com.example.signet"}}"#
        expectRejection(.environmentMismatch) { try verifier.verifyNotification(Self.signed(token)) }
        let sandboxToken = token.replacingOccurrences(of: "b2158121", with: "SANDBOX_b2158121")
        #expect(throws: Never.self) { try verifier.verifyNotification(Self.signed(sandboxToken)) }
        let appData = #"{"notificationType":"RESCIND_CONSENT","signedDate":\#(date),"appData":{"environment":"Sandbox","appAppleId":4242,"bundleId":"com.example.other"}}"#
        expectRejection(.bundleIdMismatch) { try verifier.verifyNotification(Self.signed(appData)) }
        // data wins over summary when both are present.
        let both = #"{"notificationType":"TEST","signedDate":\#(date),"data":{"environment":"Sandbox","bundleId":"com.example.signet"},"summary":{"environment":"Production","bundleId":"x"}}"#
        #expect(throws: Never.self) { try verifier.verifyNotification(Self.signed(both)) }
    }
}

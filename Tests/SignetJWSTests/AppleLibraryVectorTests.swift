import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Every vector of Apple's App Store Server Library (fixtures/apple-library-vectors)
/// under each configuration its README lists.
///
/// Apple's outcomes map to Signet's codes as follows; where Signet is stricter or more
/// precise, the test says why:
/// - VERIFICATION_FAILURE → `invalid_certificate_chain` / `certificate_not_valid_at_signed_date`
/// - INVALID_JWT_FORMAT → `malformed_jws`, `invalid_x5c`, `unsupported_algorithm` or
///   `invalid_signature` (Apple folds all of them into one code)
/// - INVALID_APP_IDENTIFIER → `bundle_id_mismatch` / `app_apple_id_mismatch`
/// - INVALID_ENVIRONMENT → `environment_mismatch`
@Suite("Apple library vectors")
struct AppleLibraryVectorTests {
    /// The library tests' configuration: roots [testCA], com.example, 1234, Sandbox.
    func verifier(
        roots: [X509Certificate]? = nil, environment: AppStoreEnvironment? = .sandbox, bundleId: String? = "com.example",
        appAppleId: Int64? = 1234, now: Date = Fixture.fixedNow
    ) throws -> AppStoreVerifier {
        try makeVerifier(VerifierConfiguration(
            roots: roots ?? [Fixture.testCA()], environment: environment, bundleId: bundleId, appAppleId: appAppleId,
            now: { now }))
    }

    // MARK: mock_signed_data, default configuration

    @Test("testNotification verifies (chain A: x5c[2] differs from the configured root and is ignored)")
    func testNotification() throws {
        let verified = try verifier().verifyNotification(Fixture.vector("mock_signed_data/testNotification"))
        #expect(verified.payload.notificationType == .test)
        #expect(verified.payload.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(verified.payload.data?.bundleId == "com.example")
        #expect(verified.effectiveDateSource == .signedDate)
        #expect(verified.transaction == nil && verified.renewalInfo == nil)
    }

    @Test("transactionInfo verifies as a transaction")
    func transactionInfo() throws {
        let verified = try verifier().verifyTransaction(Fixture.vector("mock_signed_data/transactionInfo"))
        #expect(verified.payload.environment == .sandbox)
        #expect(verified.payload.bundleId == "com.example")
    }

    @Test("renewalInfo verifies as renewal info (chain B)")
    func renewalInfo() throws {
        let verified = try verifier().verifyRenewalInfo(Fixture.vector("mock_signed_data/renewalInfo"))
        #expect(verified.payload.environment == .sandbox)
        #expect(verified.payload.signedDate?.millisecondsSince1970 == 1_672_956_154_000)
    }

    @Test("wrongBundleId (no signedDate) → bundle mismatch now, chain failure after 2033")
    func wrongBundleId() throws {
        let jws = try Fixture.vector("mock_signed_data/wrongBundleId")
        expectRejection(.bundleIdMismatch) { try verifier().verifyNotification(jws) }
        // Without signedDate or nested JWS the chain is checked at the current time; the
        // test chain ends 2033-01-01, so at 2034-06-01 Apple reports VERIFICATION_FAILURE.
        let later = Date(timeIntervalSince1970: 2_032_819_200)  // 2034-06-01
        expectRejection(.certificateNotValidAtSignedDate) { try verifier(now: later).verifyNotification(jws) }
    }

    @Test("missingX5CHeaderClaim → invalid_x5c (Apple: INVALID_JWT_FORMAT)")
    func missingX5C() throws {
        let jws = try Fixture.vector("mock_signed_data/missingX5CHeaderClaim")
        expectRejection(.invalidX5C) { try verifier().verifyNotification(jws) }
    }

    // MARK: other configurations

    @Test("testNotification: Production with the right appAppleId → environment mismatch")
    func productionEnvironment() throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.environmentMismatch) { try verifier(environment: .production, appAppleId: 1234).verifyNotification(jws) }
    }

    @Test("testNotification: Production with another appAppleId → app id mismatch (checked before the environment)")
    func productionWrongAppAppleId() throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.appAppleIdMismatch) { try verifier(environment: .production, appAppleId: 1235).verifyNotification(jws) }
    }

    @Test("Production without appAppleId is a configuration error")
    func productionWithoutAppAppleId() throws {
        let configuration = VerifierConfiguration(roots: [try Fixture.testCA()], environment: .production, bundleId: "com.example")
        #expect(throws: VerifierConfigurationError.self) { try AppStoreVerifier(configuration: configuration) }
        do {
            _ = try AppStoreVerifier(configuration: configuration)
        } catch {
            #expect(error.kind == .missingAppAppleId)
        }
    }

    @Test("Sandbox ignores appAppleId", arguments: [Int64?.some(1235), nil])
    func sandboxIgnoresAppAppleId(appAppleId: Int64?) throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        #expect(throws: Never.self) { try verifier(appAppleId: appAppleId).verifyNotification(jws) }
    }

    @Test("testNotification with another configured bundleId → bundle mismatch")
    func wrongConfiguredBundle() throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.bundleIdMismatch) { try verifier(bundleId: "com.example.x").verifyNotification(jws) }
    }

    @Test("roots: Apple G3 only → chain rejected; G3 + testCA → valid")
    func rootSets() throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.invalidCertificateChain) { try verifier(roots: [AppleRoots.appleRootCAG3]).verifyNotification(jws) }
        #expect(throws: Never.self) { try verifier(roots: [AppleRoots.appleRootCAG3, Fixture.testCA()]).verifyNotification(jws) }
    }

    @Test("roots: empty → configuration error (stricter: Apple builds a verifier that fails every input)")
    func emptyRoots() throws {
        do {
            _ = try AppStoreVerifier(configuration: VerifierConfiguration(roots: []))
            Issue.record("empty roots accepted")
        } catch {
            #expect(error.kind == .noRoots)
        }
    }

    @Test("environment Xcode: Apple skips crypto, then Sandbox ≠ Xcode; Signet verifies fully with a private root and reaches the same verdict")
    func xcodeEnvironmentWithTestRoot() throws {
        let jws = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.environmentMismatch) { try verifier(environment: .xcode).verifyNotification(jws) }
        // With Apple's real root, Xcode/LocalTesting would mean "skip signatures": refused.
        for environment in [AppStoreEnvironment.xcode, .localTesting] {
            do {
                _ = try AppStoreVerifier(configuration: VerifierConfiguration(environment: environment))
                Issue.record("\(environment) accepted with Apple's root")
            } catch {
                #expect(error.kind == .unsignedEnvironment)
            }
        }
    }

    @Test("wrongBundleId with its bundleId configured → environment mismatch (no environment in the payload)")
    func wrongBundleIdConfigured() throws {
        let jws = try Fixture.vector("mock_signed_data/wrongBundleId")
        expectRejection(.environmentMismatch) { try verifier(bundleId: "com.example.wrong").verifyNotification(jws) }
        expectRejection(.appAppleIdMismatch) {
            try verifier(environment: .production, bundleId: "com.example.wrong", appAppleId: 1234).verifyNotification(jws)
        }
    }

    @Test("missingX5CHeaderClaim with LocalTesting: Apple skips crypto (INVALID_ENVIRONMENT); Signet never skips → invalid_x5c")
    func missingX5CLocalTesting() throws {
        let jws = try Fixture.vector("mock_signed_data/missingX5CHeaderClaim")
        expectRejection(.invalidX5C) { try verifier(environment: .localTesting).verifyNotification(jws) }
    }

    @Test("transactionInfo verified as a notification → bundle mismatch (no data/summary/…)")
    func transactionAsNotification() throws {
        let jws = try Fixture.vector("mock_signed_data/transactionInfo")
        expectRejection(.bundleIdMismatch) { try verifier().verifyNotification(jws) }
    }

    @Test("transaction checks: bundleId, then environment")
    func transactionClaims() throws {
        let jws = try Fixture.vector("mock_signed_data/transactionInfo")
        expectRejection(.bundleIdMismatch) { try verifier(bundleId: "com.example.x").verifyTransaction(jws) }
        expectRejection(.environmentMismatch) { try verifier(environment: .production).verifyTransaction(jws) }
    }

    @Test("a notification or renewal info verified as a transaction → bundle mismatch (bundleId nil)")
    func wrongTypeAsTransaction() throws {
        let notification = try Fixture.vector("mock_signed_data/testNotification")
        expectRejection(.bundleIdMismatch) { try verifier(appAppleId: 1235).verifyTransaction(notification) }
        let renewal = try Fixture.vector("mock_signed_data/renewalInfo")
        expectRejection(.bundleIdMismatch) { try verifier().verifyTransaction(renewal) }
    }

    @Test("renewal info: no bundleId check, environment checked")
    func renewalClaims() throws {
        let jws = try Fixture.vector("mock_signed_data/renewalInfo")
        #expect(throws: Never.self) { try verifier(bundleId: "com.example.x").verifyRenewalInfo(jws) }
        expectRejection(.environmentMismatch) { try verifier(environment: .production).verifyRenewalInfo(jws) }
    }

    @Test("every mock vector fails against Apple's real root only")
    func mockVectorsFailWithAppleRoot() throws {
        let verifier = try verifier(roots: [AppleRoots.appleRootCAG3])
        expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(Fixture.vector("mock_signed_data/testNotification")) }
        expectRejection(.invalidCertificateChain) { try verifier.verifyTransaction(Fixture.vector("mock_signed_data/transactionInfo")) }
        expectRejection(.invalidCertificateChain) { try verifier.verifyRenewalInfo(Fixture.vector("mock_signed_data/renewalInfo")) }
    }

    // MARK: xcode/

    @Test("Xcode-signed data: one self-signed x5c entry → invalid_x5c under every configuration Signet accepts")
    func xcodeVectors() throws {
        let transaction = try Fixture.vector("xcode/xcode-signed-transaction")
        let renewal = try Fixture.vector("xcode/xcode-signed-renewal-info")
        let appTransaction = try Fixture.vector("xcode/xcode-signed-app-transaction")
        // Apple: Sandbox → INVALID_JWT_FORMAT (x5c length 1).
        expectRejection(.invalidX5C) { try verifier(bundleId: "com.example.naturelab.backyardbirds.example").verifyTransaction(transaction) }
        // Apple: Xcode → valid without any signature check. Signet refuses Xcode with Apple's
        // root (configuration error, tested above) and with a private root still demands a
        // 3-certificate chain: stricter, because Xcode's self-signed key proves nothing.
        let xcode = try verifier(environment: .xcode, bundleId: "com.example.naturelab.backyardbirds.example")
        expectRejection(.invalidX5C) { try xcode.verifyTransaction(transaction) }
        expectRejection(.invalidX5C) { try xcode.verifyRenewalInfo(renewal) }
        // Apple: with bundleId com.example → INVALID_APP_IDENTIFIER after skipping crypto.
        expectRejection(.invalidX5C) { try verifier(environment: .xcode).verifyTransaction(transaction) }
        // Apple: app transaction with Production → INVALID_JWT_FORMAT.
        expectRejection(.invalidX5C) { try verifier(environment: .production, appAppleId: 1234).verifyTransaction(appTransaction) }
    }

    // MARK: derived/

    @Test("derived forgeries: Apple says INVALID_JWT_FORMAT for all; Signet names the failure")
    func derived() throws {
        let verifier = try verifier()
        expectRejection(.invalidSignature, "badSignature: one bit of r flipped") {
            try verifier.verifyNotification(Fixture.vector("derived/testNotification.badSignature"))
        }
        expectRejection(.invalidSignature, "tamperedPayload: uuid changed") {
            try verifier.verifyNotification(Fixture.vector("derived/testNotification.tamperedPayload"))
        }
        expectRejection(.invalidX5C, "x5cTwoCerts") { try verifier.verifyNotification(Fixture.vector("derived/testNotification.x5cTwoCerts")) }
        expectRejection(.unsupportedAlgorithm, "algES384") { try verifier.verifyNotification(Fixture.vector("derived/testNotification.algES384")) }
        expectRejection(.malformedJWS, "fourSegments") { try verifier.verifyNotification(Fixture.vector("derived/fourSegments")) }
        expectRejection(.malformedJWS, "threeGarbageSegments") { try verifier.verifyNotification(Fixture.vector("derived/threeGarbageSegments")) }
    }

    // MARK: certs/ (ChainVerifier tests of the library)

    static let effectiveDate = Date(timeIntervalSince1970: 1_761_962_975)  // 2025-11-01, the library's EFFECTIVE_DATE

    @Test("test chain: leaf → intermediate → testCA is valid")
    func validTestChain() throws {
        let verifier = try verifier()
        try verifier.checkCertificateChain(
            leaf: Fixture.vectorCertificate("certs/from-test-source/leaf.der"),
            intermediate: Fixture.vectorCertificate("certs/from-test-source/intermediate_ca.der"), at: Self.effectiveDate)
    }

    @Test("intermediate with 1.2.840.113635.100.6.2.2 instead of …6.2.1 → missing_apple_oid")
    func invalidIntermediateOID() throws {
        let verifier = try verifier()
        let invalid = try Fixture.vectorCertificate("certs/from-test-source/intermediate_ca_invalid_oid.der")
        expectRejection(.missingAppleOID) {
            try verifier.checkCertificateChain(
                leaf: Fixture.vectorCertificate("certs/from-test-source/leaf.der"), intermediate: invalid, at: Self.effectiveDate)
        }
        expectRejection(.missingAppleOID) {
            try verifier.checkCertificateChain(
                leaf: Fixture.vectorCertificate("certs/from-test-source/leaf_for_intermediate_ca_invalid_oid.der"), intermediate: invalid,
                at: Self.effectiveDate)
        }
    }

    @Test("leaf with …6.11.2 → missing_apple_oid; at 2042 → expired")
    func invalidLeafOIDAndExpiry() throws {
        let verifier = try verifier()
        let leaf = try Fixture.vectorCertificate("certs/from-test-source/leaf_invalid_oid.der")
        let intermediate = try Fixture.vectorCertificate("certs/from-test-source/intermediate_ca.der")
        expectRejection(.missingAppleOID) { try verifier.checkCertificateChain(leaf: leaf, intermediate: intermediate, at: Self.effectiveDate) }
        expectRejection(.certificateNotValidAtSignedDate) {
            try verifier.checkCertificateChain(leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: 2_280_946_846))
        }
    }

    @Test("real Apple chain (receipt-signing leaf → WWDR G6 → G3) is valid at 2025-11-01 and only under G3")
    func realAppleChain() throws {
        let leaf = try Fixture.vectorCertificate("certs/from-test-source/real_apple_receipt_signing_leaf.der")
        let intermediate = try Fixture.vectorCertificate("certs/from-test-source/real_apple_wwdr_g6.der")
        let root = try Fixture.vectorCertificate("certs/from-test-source/real_apple_root_ca_g3.der")
        #expect(root == AppleRoots.appleRootCAG3)
        let apple = try makeVerifier(VerifierConfiguration(now: { Self.effectiveDate }))
        try apple.checkCertificateChain(leaf: leaf, intermediate: intermediate, at: Self.effectiveDate)
        expectRejection(.certificateNotValidAtSignedDate) {
            try apple.checkCertificateChain(leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: 1_830_000_000))
        }
        expectRejection(.invalidCertificateChain) {
            try verifier().checkCertificateChain(leaf: leaf, intermediate: intermediate, at: Self.effectiveDate)
        }
    }

    @Test("the leaf's SubjectPublicKeyInfo matches leaf_public_key_spki.der")
    func leafKey() throws {
        let leaf = try Fixture.vectorCertificate("certs/from-test-source/leaf.der")
        let spki = try Fixture.bytes(FixturePaths.appleLibraryVectors.appendingPathComponent("certs/from-test-source/leaf_public_key_spki.der"))
        #expect(try leaf.publicKey.subjectPublicKeyInfoDER == spki)
        #expect(try leaf.publicKey.curve == .p256)
    }
}

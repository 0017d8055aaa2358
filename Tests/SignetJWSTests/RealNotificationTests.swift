import AppStoreModels
import Foundation
import SignetCore
import SignetJWS
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Real notifications signed by Apple (fixtures/apple-real), verified against the
/// built-in Apple Root CA - G3 only.
@Suite("Real Apple data")
struct RealNotificationTests {
    /// Later than every sample's signedDate, so the future-skew check never interferes.
    static let now = Date(timeIntervalSince1970: 1_780_000_000)  // 2026-05-28

    func verifier(environment: AppStoreEnvironment? = nil, bundleId: String? = nil, appAppleId: Int64? = nil) throws -> AppStoreVerifier {
        try makeVerifier(VerifierConfiguration(environment: environment, bundleId: bundleId, appAppleId: appAppleId, now: { Self.now }))
    }

    @Test("all 29 notifications verify and decode as the manifest says")
    func notificationsVerify() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let manifest = try Fixture.manifest()["notifications"] ?? []
        #expect(lines.count == 29)
        #expect(manifest.count == 29)
        let verifier = try verifier()
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            #expect(expected["line"] as? Int == index + 1)
            let verified: VerifiedNotification
            do {
                verified = try verifier.verifyNotification(jws)
            } catch {
                Issue.record("line \(index + 1) rejected: \(error)")
                continue
            }
            let payload = verified.payload
            #expect(payload.notificationType?.rawValue == expected["notificationType"] as? String, "line \(index + 1)")
            #expect(payload.subtype?.rawValue == expected["subtype"] as? String, "line \(index + 1)")
            #expect(payload.notificationUUID == expected["notificationUUID"] as? String, "line \(index + 1)")
            #expect(payload.version == expected["version"] as? String, "line \(index + 1)")
            #expect(payload.data?.environment?.rawValue == expected["environment"] as? String, "line \(index + 1)")
            #expect(payload.data?.bundleId == expected["bundleId"] as? String, "line \(index + 1)")
            #expect(payload.data?.appAppleId == (expected["appAppleId"] as? NSNumber)?.int64Value, "line \(index + 1)")
            #expect(payload.signedDate?.millisecondsSince1970 == (expected["signedDate"] as? NSNumber)?.int64Value, "line \(index + 1)")
            #expect((verified.transaction != nil) == (expected["has_signedTransactionInfo"] as? Bool ?? false), "line \(index + 1)")
            #expect((verified.renewalInfo != nil) == (expected["has_signedRenewalInfo"] as? Bool ?? false), "line \(index + 1)")
            #expect(verified.signingCertificate.serialNumberHex == (expected["leaf_serial"] as? String)?.drop(while: { $0 == "0" }).description)
            // The verification instant is the manifest's verify_at.
            let verifyAt = (expected["verify_at_ms"] as? NSNumber)?.int64Value
            #expect(AppleTimestamp(verified.effectiveDate)?.millisecondsSince1970 == verifyAt, "line \(index + 1)")
            // payloadJSON is exactly the signed segment's bytes.
            let segment = segments(jws)[1]
            #expect(verified.payloadJSON == (try? Base64.decodeURL(segment)), "line \(index + 1)")
        }
    }

    @Test("line 29 has no signedDate and verifies at its nested transaction's signedDate")
    func line29UsesNestedTransactionDate() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let verified = try verifier().verifyNotification(lines[28])
        #expect(verified.payload.signedDate == nil)
        #expect(verified.effectiveDateSource == .nestedTransactionSignedDate)
        #expect(AppleTimestamp(verified.effectiveDate)?.millisecondsSince1970 == 1_646_387_008_254)
        #expect(verified.transaction?.effectiveDateSource == .signedDate)
        // Its leaf expired in 2023: Apple's fallback (current time) rejects it, and so
        // does Signet when told to use the current time.
        let strict = try makeVerifier(VerifierConfiguration(dateRule: .currentTime, now: { Self.now }))
        let rejection = expectRejection(.certificateNotValidAtSignedDate) { try strict.verifyNotification(lines[28]) }
        #expect(rejection?.detail.contains("the current time") == true)
    }

    @Test("lines 1–13 and 29 fail at the current time because their leaves expired")
    func currentTimeRuleRejectsExpiredLeaves() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let strict = try makeVerifier(VerifierConfiguration(dateRule: .currentTime, now: { Self.now }))
        for index in 0..<13 {
            expectRejection(.certificateNotValidAtSignedDate, "line \(index + 1)") { try strict.verifyNotification(lines[index]) }
        }
        for index in 13..<28 {
            #expect(throws: Never.self, "line \(index + 1)") { try strict.verifyNotification(lines[index]) }
        }
    }

    @Test("every notification with one payload byte changed is rejected")
    func tamperedPayloadsAreRejected() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let verifier = try verifier()
        for (index, jws) in lines.enumerated() {
            var payload = try Base64.decodeURL(segments(jws)[1])
            // Change a byte in the middle of the JSON (a different byte every line).
            let position = payload.count / 2 + index
            payload[position] = payload[position] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
            let forged = replacingPayload(of: jws, with: payload)
            expectRejection(.invalidSignature, "line \(index + 1)") { try verifier.verifyNotification(forged) }
            // And a flipped character in the encoded segment itself (still valid base64url).
            var chars = Array(jws.utf8)
            let offset = segments(jws)[0].utf8.count + 10 + index
            chars[offset] = chars[offset] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            expectRejection(.invalidSignature, "line \(index + 1), encoded") { try verifier.verifyNotification(chars) }
        }
    }

    @Test("all transactions verify")
    func transactionsVerify() throws {
        let lines = try Fixture.ndjson("transactions.ndjson", field: "signedTransactionInfo")
        let manifest = try Fixture.manifest()["transactions"] ?? []
        #expect(lines.count == 31)
        let verifier = try verifier()
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            do {
                let verified = try verifier.verifyTransaction(jws)
                #expect(verified.payload.bundleId == expected["bundleId"] as? String, "line \(index + 1)")
                #expect(verified.payload.environment?.rawValue == expected["environment"] as? String, "line \(index + 1)")
                #expect(verified.payload.productId == expected["productId"] as? String, "line \(index + 1)")
                #expect(verified.payload.signedDate?.millisecondsSince1970 == (expected["signedDate"] as? NSNumber)?.int64Value)
            } catch {
                Issue.record("transaction line \(index + 1) rejected: \(error)")
            }
        }
    }

    @Test("all renewal infos verify")
    func renewalInfosVerify() throws {
        let lines = try Fixture.ndjson("renewal-infos.ndjson", field: "signedRenewalInfo")
        let manifest = try Fixture.manifest()["renewal_infos"] ?? []
        #expect(lines.count == 24)
        let verifier = try verifier()
        for (index, jws) in lines.enumerated() {
            let expected = manifest[index]
            do {
                let verified = try verifier.verifyRenewalInfo(jws)
                #expect(verified.payload.environment?.rawValue == expected["environment"] as? String, "line \(index + 1)")
                #expect(verified.payload.signedDate?.millisecondsSince1970 == (expected["signedDate"] as? NSNumber)?.int64Value)
            } catch {
                Issue.record("renewal line \(index + 1) rejected: \(error)")
            }
        }
    }

    @Test("claims of real data: Production notification needs the right appAppleId")
    func realClaims() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        // Line 3: Production, com.jrjj.keysns.
        let manifest = try Fixture.manifest()["notifications"] ?? []
        let appAppleId = try #require((manifest[2]["appAppleId"] as? NSNumber)?.int64Value)
        let good = try verifier(environment: .production, bundleId: "com.jrjj.keysns", appAppleId: appAppleId)
        #expect(throws: Never.self) { try good.verifyNotification(lines[2]) }
        let wrongApp = try verifier(environment: .production, bundleId: "com.jrjj.keysns", appAppleId: appAppleId + 1)
        expectRejection(.appAppleIdMismatch) { try wrongApp.verifyNotification(lines[2]) }
        let sandbox = try verifier(environment: .sandbox)
        expectRejection(.environmentMismatch) { try sandbox.verifyNotification(lines[2]) }
        let otherBundle = try verifier(bundleId: "com.example.other")
        expectRejection(.bundleIdMismatch) { try otherBundle.verifyNotification(lines[2]) }
        // The nested transaction of a Sandbox notification is checked against bundleId too.
        let session = try verifier(environment: .sandbox, bundleId: "com.loki-project.loki-messenger")
        #expect(throws: Never.self) { try session.verifyNotification(lines[20]) }
    }

    @Test("the real chain verifies only with Apple's root: other Apple roots do not anchor it")
    func otherRootsDoNotVerify() throws {
        let lines = try Fixture.ndjson("notifications.ndjson", field: "signedPayload")
        let g2 = try X509Certificate.loadAll(fromFile: FixturePaths.appleReal.appendingPathComponent("AppleRootCA-G2.pem").path)
        let inc = try X509Certificate.loadAll(fromFile: FixturePaths.appleReal.appendingPathComponent("AppleIncRootCertificate.der").path)
        let verifier = try makeVerifier(VerifierConfiguration(roots: g2 + inc, now: { Self.now }))
        expectRejection(.invalidCertificateChain) { try verifier.verifyNotification(lines[15]) }
        // The WWDR intermediate configured as a "root" does not help: partial chains are not allowed.
        let wwdr = try X509Certificate.loadAll(fromFile: FixturePaths.appleReal.appendingPathComponent("AppleWWDRCAG6.pem").path)
        let partial = try makeVerifier(VerifierConfiguration(roots: wwdr, now: { Self.now }))
        expectRejection(.invalidCertificateChain) { try partial.verifyNotification(lines[15]) }
    }
}

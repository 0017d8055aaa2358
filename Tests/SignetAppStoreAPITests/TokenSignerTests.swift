import Foundation
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetOpenSSL
import SignetTestSupport
import Synchronization
import Testing

@Suite("App Store Server API JWT: Apple's format, checked like Apple checks it")
struct TokenSignerTests {
    static func parts(_ token: String) throws -> (header: [String: Any], claims: [String: Any], signature: [UInt8]) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(segments.count == 3)
        let header = try #require(try JSONSerialization.jsonObject(with: Data(Base64.decodeURL(segments[0]))) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(Base64.decodeURL(segments[1]))) as? [String: Any])
        return (header, claims, try Base64.decodeURL(segments[2]))
    }

    @Test("the token has Apple's header and claims, backdated iat, exp 20 min later, a raw 64-byte signature, and passes the fake's check")
    func tokenShape() throws {
        let bed = try APITestBed()
        let now = Date()
        let token = try AppStoreAPITokenSigner(credentials: bed.credentials, now: { now }).token()
        let (header, claims, signature) = try Self.parts(token)
        #expect(header as NSDictionary == ["alg": "ES256", "kid": "KEY123ABCD", "typ": "JWT"] as NSDictionary)
        #expect(claims["iss"] as? String == bed.credentials.issuerId)
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == APITestBed.bundleId)
        let iat = try #require(claims["iat"] as? Int)
        let exp = try #require(claims["exp"] as? Int)
        #expect(iat == Int(now.timeIntervalSince1970) - 60)
        #expect(exp - iat == 20 * 60)
        #expect(signature.count == 64)
        #expect(bed.check.refusal(authorization: "Bearer \(token)", now: now) == nil)
    }

    @Test("the fake refuses a tampered, expired, wrong-aud, over-long, future or foreign-key token")
    func refusals() throws {
        let bed = try APITestBed()
        let signer = AppStoreAPITokenSigner(credentials: bed.credentials)
        let now = Date()
        let good = try signer.sign(issuedAt: now, expires: now + 600)
        #expect(bed.check.refusal(authorization: "Bearer \(good)") == nil)

        // Another payload under the original signature.
        var segments = good.split(separator: ".").map(String.init)
        let forgedClaims = try JSONSerialization.data(withJSONObject: [
            "iss": bed.credentials.issuerId, "aud": "appstoreconnect-v1", "bid": "com.attacker.app",
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 600,
        ])
        segments[1] = Base64.encodeURL(Array(forgedClaims))
        #expect(bed.check.refusal(authorization: "Bearer " + segments.joined(separator: ".")) == "bad signature")

        let expired = try signer.sign(issuedAt: now - 3000, expires: now - 60)
        #expect(bed.check.refusal(authorization: "Bearer \(expired)") == "expired")
        let wrongAudience = try signer.sign(issuedAt: now, expires: now + 600, audience: "appstoreconnect-v2")
        #expect(bed.check.refusal(authorization: "Bearer \(wrongAudience)") == "wrong aud")
        let tooLong = try signer.sign(issuedAt: now - 60, expires: now + 3601)
        #expect(bed.check.refusal(authorization: "Bearer \(tooLong)") == "exp more than 60 minutes after iat")
        let future = try signer.sign(issuedAt: now + 600, expires: now + 1200)
        #expect(bed.check.refusal(authorization: "Bearer \(future)") == "iat in the future")

        let other = try APITestBed()  // same kid, another key
        let foreign = try AppStoreAPITokenSigner(credentials: other.credentials).sign(issuedAt: now, expires: now + 600)
        #expect(bed.check.refusal(authorization: "Bearer \(foreign)") == "bad signature")
        #expect(bed.check.refusal(authorization: nil) == "no bearer token")
    }

    @Test("a token is reused until 5 minutes before exp, then replaced")
    func reuse() throws {
        let bed = try APITestBed()
        let clock = Mutex(Date())
        let signer = AppStoreAPITokenSigner(credentials: bed.credentials, now: { clock.withLock { $0 } })
        let first = try signer.token()
        clock.withLock { $0 += 13 * 60 }  // exp is now 6 minutes away
        #expect(try signer.token() == first)
        clock.withLock { $0 += 2 * 60 }  // 4 minutes left: too close
        let second = try signer.token()
        #expect(second != first)
        #expect(bed.check.refusal(authorization: "Bearer \(second)", now: clock.withLock { $0 }) == nil)
    }

    @Test("credentials take a PKCS#8 P-256 PEM, refuse P-384 and garbage, and never show the key")
    func credentials() throws {
        let key = try ECPrivateKey(generating: .p256)
        #expect(key.pemEncoded.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let credentials = try AppStoreAPICredentials(keyId: "K", issuerId: "I", bundleId: "B", privateKeyPEM: key.pemEncoded)
        #expect(!credentials.description.contains("BEGIN"))
        #expect(credentials.description.contains("<redacted>"))
        let body = key.pemEncoded.split(separator: "\n").dropFirst().first.map(String.init) ?? "x"
        #expect(!"\(credentials)".contains(body))

        let p384 = try ECPrivateKey(generating: .p384)
        let error = #expect(throws: AppStoreAPIConfigurationError.self) {
            try AppStoreAPICredentials(keyId: "K", issuerId: "I", bundleId: "B", privateKeyPEM: p384.pemEncoded)
        }
        #expect(error?.message.contains("not P-256") == true)
        #expect(throws: AppStoreAPIConfigurationError.self) {
            try AppStoreAPICredentials(keyId: "K", issuerId: "I", bundleId: "B", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        let empty = #expect(throws: AppStoreAPIConfigurationError.self) {
            try AppStoreAPICredentials(keyId: " ", issuerId: "I", bundleId: "B", privateKeyPEM: key.pemEncoded)
        }
        #expect(empty?.message.contains("key id") == true)
    }
}

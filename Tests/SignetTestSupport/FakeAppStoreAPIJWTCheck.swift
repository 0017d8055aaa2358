public import Foundation
package import SignetOpenSSL

/// The fake App Store Server API's check of a request's `Authorization: Bearer <JWT>`, as
/// Apple documents it: three base64url segments; header `alg` ES256, `kid` the key's id,
/// `typ` JWT; a raw 64-byte ES256 signature by the key's public half; claims `iss`, `aud`
/// `appstoreconnect-v1`, `bid`, `iat` not in the future (a little skew allowed), `exp` after
/// now and at most 60 minutes after `iat`.
public struct FakeAppStoreAPIJWTCheck: Sendable {
    public var keyId: String
    public var issuerId: String
    public var bundleId: String
    package var publicKey: ECPublicKey
    /// How far `iat` may lie ahead of the fake's clock.
    public var allowedSkew: TimeInterval = 60

    package init(keyId: String, issuerId: String, bundleId: String, publicKey: ECPublicKey) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.publicKey = publicKey
    }

    /// nil when the header carries an acceptable token, else why not (the fake answers a
    /// bare 401 either way, as Apple does; the reason is recorded for tests).
    public func refusal(authorization: String?, now: Date = Date()) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = try? Base64.decodeURL(String(parts[0])),
              let claimBytes = try? Base64.decodeURL(String(parts[1])),
              let signature = try? Base64.decodeURL(String(parts[2])),
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
              let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any]
        else { return "not a compact JWS" }
        guard header["alg"] as? String == "ES256" else { return "alg is not ES256" }
        guard header["typ"] as? String == "JWT" else { return "typ is not JWT" }
        guard header["kid"] as? String == keyId else { return "unknown kid" }
        guard signature.count == 64,
              publicKey.verifyES256(rawSignature: signature, message: Array("\(parts[0]).\(parts[1])".utf8))
        else { return "bad signature" }
        guard claims["iss"] as? String == issuerId else { return "wrong iss" }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return "wrong aud" }
        guard claims["bid"] as? String == bundleId else { return "wrong bid" }
        guard let iat = (claims["iat"] as? NSNumber)?.doubleValue, let exp = (claims["exp"] as? NSNumber)?.doubleValue else {
            return "iat or exp missing"
        }
        let seconds = now.timeIntervalSince1970
        guard iat <= seconds + allowedSkew else { return "iat in the future" }
        guard exp > seconds else { return "expired" }
        guard exp - iat <= 3600 else { return "exp more than 60 minutes after iat" }
        return nil
    }
}

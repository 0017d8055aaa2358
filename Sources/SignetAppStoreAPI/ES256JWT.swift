import SignetCore
import SignetOpenSSL

/// The compact JWS Signet signs with the In-App Purchase key (the API's bearer tokens, offer
/// signatures): header `{"alg":"ES256","kid":…,"typ":"JWT"}`, the claims `claims` writes, and
/// the raw 64-byte `r || s` ES256 carries (never DER), all base64url without padding.
enum ES256JWT {
    static func sign(with credentials: AppStoreAPICredentials, claims: (inout JSONText) -> Void) throws(OpenSSLError) -> String {
        var header = JSONText(reserving: 64)
        header.beginObject()
        header.field("alg", "ES256")
        header.field("kid", credentials.keyId)
        header.field("typ", "JWT")
        header.endObject()
        var payload = JSONText(reserving: 320)
        payload.beginObject()
        claims(&payload)
        payload.endObject()
        let signingInput = Base64.encodeURL(header.bytes) + "." + Base64.encodeURL(payload.bytes)
        let signature = try credentials.privateKey.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64.encodeURL(signature)
    }
}

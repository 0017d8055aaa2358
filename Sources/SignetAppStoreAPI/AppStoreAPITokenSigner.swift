public import Foundation
import SignetCore
public import SignetOpenSSL
import Synchronization

/// Signs the JWT every App Store Server API request carries (`Authorization: Bearer …`),
/// exactly as Apple documents: header `{"alg":"ES256","kid":…,"typ":"JWT"}`, claims `iss`,
/// `iat`, `exp`, `aud` = `appstoreconnect-v1`, `bid`, and a raw 64-byte `r || s`
/// signature, all base64url without padding.
///
/// `iat` is backdated by `backdating` so a server clock slightly behind ours does not
/// see a token from the future, and `exp` is ``lifetime`` after `iat`, well under Apple's
/// 60-minute cap (tokens valid a full hour gave peers intermittent 401s). A token is reused
/// until `renewalMargin` before its `exp` (Apple allows reuse), so a busy client signs
/// about once every quarter of an hour, not per request.
public final class AppStoreAPITokenSigner: Sendable {
    /// Apple's `aud` for every App Store Server API token.
    public static let audience = "appstoreconnect-v1"
    /// How far `iat` lies in the past.
    package static let backdating: TimeInterval = 60
    /// `exp - iat`; Apple refuses more than 3600 s.
    public static let lifetime: TimeInterval = 20 * 60
    /// A token is replaced once it has less than this left.
    package static let renewalMargin: TimeInterval = 5 * 60

    private let credentials: AppStoreAPICredentials
    private let now: @Sendable () -> Date
    private let cached = Mutex<(token: String, expires: Date)?>(nil)

    /// - Parameters:
    ///   - credentials: the In-App Purchase key, its key id, issuer id and bundle id.
    ///   - now: the clock (tests move it to check renewal and expiry).
    public init(credentials: AppStoreAPICredentials, now: @escaping @Sendable () -> Date = { Date() }) {
        self.credentials = credentials
        self.now = now
    }

    /// A valid token: the cached one while it has more than `renewalMargin` left, else a new one.
    public func token() throws(OpenSSLError) -> String {
        let instant = now()
        if let reusable = cached.withLock({ $0 }), reusable.expires.timeIntervalSince(instant) > Self.renewalMargin {
            return reusable.token
        }
        let issued = instant.addingTimeInterval(-Self.backdating)
        let expires = issued.addingTimeInterval(Self.lifetime)
        let token = try sign(issuedAt: issued, expires: expires)
        cached.withLock { $0 = (token, expires) }
        return token
    }

    /// A token with exactly these instants (tests forge expired ones with it).
    public func sign(issuedAt: Date, expires: Date, audience: String = AppStoreAPITokenSigner.audience) throws(OpenSSLError) -> String {
        try ES256JWT.sign(with: credentials) { claims in
            claims.field("iss", credentials.issuerId)
            claims.field("iat", Int64(issuedAt.timeIntervalSince1970.rounded(.down)))
            claims.field("exp", Int64(expires.timeIntervalSince1970.rounded(.down)))
            claims.field("aud", audience)
            claims.field("bid", credentials.bundleId)
        }
    }
}

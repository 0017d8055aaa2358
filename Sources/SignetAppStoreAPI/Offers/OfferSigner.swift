public import Foundation
import SignetCore
import SignetOpenSSL

/// Signs what the app needs from its server before StoreKit shows an offer, with the In-App
/// Purchase key: a promotional offer (V2, a JWS; or the legacy V1 signature), introductory
/// offer eligibility (a JWS) and an Advanced Commerce API in-app request (a JWS).
///
/// The JWS header is `{"alg":"ES256","kid":…,"typ":"JWT"}` and the claims are `iss`, `iat`
/// (whole seconds), `aud` (which names the feature), `bid`, a fresh lower-case UUID `nonce`,
/// and the feature's own claims; never `exp` (Apple refuses a request that carries one and
/// derives the expiry from `iat`). The signature is the raw 64-byte `r || s`, all base64url
/// without padding. docs/offers.md gives Apple's rules with their sources.
///
/// ```swift
/// let signer = OfferSigner(credentials: try AppStoreAPICredentials(
///     keyId: "2X9R4HXF34", issuerId: issuer, bundleId: "com.example.app", privateKeyFile: "SubscriptionKey.p8"))
/// let jws = try signer.promotionalOfferV2(
///     productId: "com.example.monthly", offerIdentifier: "winback.50", transactionId: originalTransactionId)
/// ```
///
/// Signing checks its inputs first (``OfferSignatureError/invalidInput(_:)``) and never signs
/// what Apple would refuse.
public struct OfferSigner: Sendable {
    /// The `aud` claim of each kind of JWS: Apple tells the features apart by it.
    enum Audience: String {
        case promotionalOffer = "promotional-offer"
        case introductoryOfferEligibility = "introductory-offer-eligibility"
        case advancedCommerce = "advanced-commerce-api"
    }

    let credentials: AppStoreAPICredentials
    let now: @Sendable () -> Date
    let makeNonce: @Sendable () -> UUID

    /// - Parameters:
    ///   - credentials: the In-App Purchase key (a P-256 `.p8`), its key id, the issuer id and
    ///     the app's bundle id: the same credentials as the App Store Server API client's.
    ///   - now: the clock for `iat` and the V1 timestamp (tests fix it).
    ///   - nonce: makes each signature's one-time nonce (tests fix it); a random UUID by default.
    public init(
        credentials: AppStoreAPICredentials, now: @escaping @Sendable () -> Date = { Date() },
        nonce: @escaping @Sendable () -> UUID = { UUID() }
    ) {
        self.credentials = credentials
        self.now = now
        self.makeNonce = nonce
    }

    /// The key id signatures name (`kid`, and V1's `keyIdentifier`).
    public var keyId: String { credentials.keyId }

    /// A compact JWS with the common header and claims, then `claims`' own.
    func jws(audience: Audience, _ claims: (inout JSONText) -> Void) throws(OfferSignatureError) -> String {
        do {
            return try ES256JWT.sign(with: credentials) { payload in
                payload.field("iss", credentials.issuerId)
                payload.field("iat", Int64(now().timeIntervalSince1970.rounded(.down)))
                payload.field("aud", audience.rawValue)
                payload.field("bid", credentials.bundleId)
                payload.field("nonce", makeNonce().uuidString.lowercased())
                claims(&payload)
            }
        } catch {
            throw .signingFailed(error)
        }
    }

    /// Refuses an empty or blank identifier before anything is signed.
    static func require(_ value: String, _ name: String) throws(OfferSignatureError) {
        guard !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw .invalidInput("\(name) is empty")
        }
        guard value.utf8.count <= 1024 else { throw .invalidInput("\(name) is longer than 1024 bytes") }
    }
}

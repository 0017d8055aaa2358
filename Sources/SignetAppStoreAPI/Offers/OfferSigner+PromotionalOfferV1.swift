public import AppStoreModels
public import Foundation
import SignetOpenSSL

extension OfferSigner {
    /// Apple's separator between the V1 message's fields: U+2063 INVISIBLE SEPARATOR.
    static let v1Separator = "\u{2063}"

    /// A legacy promotional offer signature (V1), for apps on StoreKit versions without the
    /// JWS form. The message signed is, joined by U+2063: bundle id, key id, product id, offer
    /// identifier, appAccountToken (lower case, or empty), nonce (lower case), timestamp (ms).
    ///
    /// - Parameters:
    ///   - productId: the subscription's product id.
    ///   - offerIdentifier: the promotional offer's identifier in App Store Connect.
    ///   - appAccountToken: the token the app will pass with the purchase, if any: it must be
    ///     the same, or the App Store refuses the offer.
    ///   - nonce: the one-time nonce; a fresh one when nil.
    public func promotionalOfferV1(
        productId: String, offerIdentifier: String, appAccountToken: AppAccountToken? = nil, nonce: UUID? = nil
    ) throws(OfferSignatureError) -> PromotionalOfferV1Signature {
        try Self.require(productId, "productId")
        try Self.require(offerIdentifier, "offerIdentifier")
        let nonce = nonce ?? makeNonce()
        let timestamp = Int64((now().timeIntervalSince1970 * 1000).rounded(.down))
        let message = Self.v1Message(
            bundleId: credentials.bundleId, keyId: credentials.keyId, productId: productId, offerIdentifier: offerIdentifier,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        do {
            let der = try credentials.privateKey.signDER(digest: SHA256.hash(Array(message.utf8)))
            return PromotionalOfferV1Signature(keyIdentifier: credentials.keyId, nonce: nonce, timestamp: timestamp, signature: Base64.encode(der))
        } catch {
            throw .signingFailed(error)
        }
    }

    /// The exact text a V1 signature covers (tests and `--explain` print it).
    package static func v1Message(
        bundleId: String, keyId: String, productId: String, offerIdentifier: String, appAccountToken: AppAccountToken?, nonce: UUID,
        timestamp: Int64
    ) -> String {
        [bundleId, keyId, productId, offerIdentifier, appAccountToken?.description ?? "", nonce.uuidString.lowercased(), String(timestamp)]
            .joined(separator: v1Separator)
    }
}

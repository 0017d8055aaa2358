import Foundation
import SignetCore

extension OfferSigner {
    /// A promotional offer signature V2: the JWS the app passes to StoreKit's
    /// `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`, and a retention answer's
    /// `promotionalOfferSignatureV2`.
    ///
    /// - Parameters:
    ///   - productId: the subscription's product id.
    ///   - offerIdentifier: the promotional offer's identifier in App Store Connect.
    ///   - transactionId: any transaction of the customer's (their appTransactionId works even
    ///     before a first purchase). Optional for the app, but recommended; a retention answer
    ///     requires the request's originalTransactionId here. Omitted from the claims when nil.
    public func promotionalOfferV2(productId: String, offerIdentifier: String, transactionId: String? = nil) throws(OfferSignatureError) -> String {
        try Self.require(productId, "productId")
        try Self.require(offerIdentifier, "offerIdentifier")
        if let transactionId { try Self.require(transactionId, "transactionId") }
        return try jws(audience: .promotionalOffer) { claims in
            claims.field("productId", productId)
            claims.field("offerIdentifier", offerIdentifier)
            claims.field("transactionId", transactionId)
        }
    }

    /// An introductory offer eligibility JWS, for StoreKit's
    /// `Product.PurchaseOption.introductoryOfferEligibility(compactJWS:)`: `allowIntroductoryOffer`
    /// true lets the customer have the introductory offer even where the App Store would not,
    /// false withholds it.
    ///
    /// - Parameters:
    ///   - productId: the subscription's product id.
    ///   - allowIntroductoryOffer: whether the customer may have the introductory offer.
    ///   - transactionId: a transaction of the customer's (required: Apple's libraries send it always).
    public func introductoryOfferEligibility(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String
    ) throws(OfferSignatureError) -> String {
        try Self.require(productId, "productId")
        try Self.require(transactionId, "transactionId")
        return try jws(audience: .introductoryOfferEligibility) { claims in
            claims.field("productId", productId)
            claims.field("allowIntroductoryOffer", allowIntroductoryOffer)
            claims.field("transactionId", transactionId)
        }
    }
}

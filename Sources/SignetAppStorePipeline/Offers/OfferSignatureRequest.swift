public import AppStoreModels

/// What the app's backend asks `POST /v1/offers/signature` for (a JSON body).
public struct OfferSignatureRequest: Sendable, Hashable, Decodable {
    /// Which offer, and so which rule of eligibility applies (``OfferEligibility``).
    public enum Offer: String, Sendable, Hashable, Decodable, CaseIterable {
        /// A promotional offer for a current subscriber (active, in grace or billing retry).
        case promotional
        /// A promotional offer to win back a customer whose subscription lapsed (expired).
        case winBack = "win_back"
        /// Introductory offer eligibility (a JWS allowing the introductory offer) for a customer
        /// who never subscribed to the product's subscription group.
        case introductory
    }

    public var offer: Offer
    /// The product the offer is for.
    public var productId: String
    /// The promotional offer's identifier (promotional, win_back).
    public var offerIdentifier: String?
    /// The customer's purchase (promotional, win_back: required; introductory: one of the
    /// customer's purchases, if any).
    public var originalTransactionId: String?
    /// The customer's account (introductory: every purchase made with it is considered).
    public var appAccountToken: String?
    /// Introductory: the JWS's `transactionId` (the customer's appTransactionId works before any
    /// purchase); default the originalTransactionId.
    public var transactionId: String?
    /// Introductory: the product's subscription group, when Signet has not seen the product bought.
    public var subscriptionGroupIdentifier: String?
    /// `v2` (default, a JWS) or `v1` (the legacy signature, with the purchase's appAccountToken).
    public var signature: String?

    public init(
        offer: Offer, productId: String, offerIdentifier: String? = nil, originalTransactionId: String? = nil, appAccountToken: String? = nil,
        transactionId: String? = nil, subscriptionGroupIdentifier: String? = nil, signature: String? = nil
    ) {
        self.offer = offer
        self.productId = productId
        self.offerIdentifier = offerIdentifier
        self.originalTransactionId = originalTransactionId
        self.appAccountToken = appAccountToken
        self.transactionId = transactionId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.signature = signature
    }
}

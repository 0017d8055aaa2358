import SignetCore

/// What a rule answers Apple's Get Retention Message request with: one of the
/// `RealtimeResponseBody` variants (docs/retention.md §2.2). Message identifiers are the ids
/// of messages uploaded and approved beforehand (`signet appstore retention ...`).
public enum RetentionAnswer: Sendable, Hashable {
    /// `{"message": {"messageIdentifier": …}}`: a text message (with or without an image).
    case message(messageIdentifier: String)
    /// `{"alternateProduct": {…}}`: a switch-plan message suggesting `productId` (in the same
    /// subscription group), with `billingPlanType` (`MONTHLY`, `BILLED_UPFRONT`) where given.
    case alternateProduct(messageIdentifier: String, productId: String, billingPlanType: String?)
    /// `{"promotionalOffer": {…}}`: a promotional-offer message with an offer signed for the
    /// customer's purchase; `productId` nil means the request's product.
    case promotionalOffer(messageIdentifier: String, offerIdentifier: String, productId: String?)

    /// The kind, as reports and metrics name it.
    public var kind: String {
        switch self {
        case .message: "message"
        case .alternateProduct: "alternate_product"
        case .promotionalOffer: "promotional_offer"
        }
    }

    /// Apple's documented billing plan types (1.5): the only values `billing_plan_type` takes.
    static let billingPlanTypes = ["MONTHLY", "BILLED_UPFRONT"]
}

/// The signature a promotional-offer answer carries, made by ``RetentionResponder``.
enum RetentionOfferSignature: Sendable {
    /// `promotionalOfferSignatureV2`: the compact JWS.
    case v2(String)
    /// `promotionalOfferSignatureV1`: the object's fields.
    case v1(
        encodedSignature: String, productId: String, nonce: String, timestamp: Int64, keyId: String, offerIdentifier: String,
        appAccountToken: String?)
}

extension RetentionAnswer {
    /// The `RealtimeResponseBody` JSON: exactly one key, as Apple requires.
    func responseBody(signature: RetentionOfferSignature?) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        switch self {
        case .message(let messageIdentifier):
            json.key("message")
            json.beginObject()
            json.field("messageIdentifier", messageIdentifier)
            json.endObject()
        case .alternateProduct(let messageIdentifier, let productId, let billingPlanType):
            json.key("alternateProduct")
            json.beginObject()
            json.field("messageIdentifier", messageIdentifier)
            json.field("productId", productId)
            if let billingPlanType { json.field("billingPlanType", billingPlanType) }
            json.endObject()
        case .promotionalOffer(let messageIdentifier, _, _):
            json.key("promotionalOffer")
            json.beginObject()
            json.field("messageIdentifier", messageIdentifier)
            switch signature {
            case .v2(let jws)?:
                json.field("promotionalOfferSignatureV2", jws)
            case .v1(let encodedSignature, let productId, let nonce, let timestamp, let keyId, let offerIdentifier, let token)?:
                json.key("promotionalOfferSignatureV1")
                json.beginObject()
                json.field("encodedSignature", encodedSignature)
                json.field("productId", productId)
                json.field("nonce", nonce)
                json.field("timestamp", timestamp)
                json.field("keyId", keyId)
                json.field("offerIdentifier", offerIdentifier)
                json.field("appAccountToken", token)
                json.endObject()
            case nil:
                break
            }
            json.endObject()
        }
        json.endObject()
        return json.bytes
    }
}

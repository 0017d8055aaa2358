import AppStoreModels
import SignetCore
import SignetOpenSSL

extension OfferSigner {
    /// An Advanced Commerce API in-app request JWS: `request` carries `requestJSON` (a JSON
    /// object: OneTimeChargeCreateRequest, SubscriptionCreateRequest,
    /// SubscriptionModifyInAppRequest or SubscriptionReactivateInAppRequest) in standard base64.
    ///
    /// The app wraps it as ``advancedCommerceData(requestJSON:)`` does and passes that to
    /// `Product.PurchaseOption.custom(key: "advancedCommerceData", value:)`.
    public func advancedCommerceInAppRequest(requestJSON: [UInt8]) throws(OfferSignatureError) -> String {
        let request: JSONElement
        do {
            request = try JSONElement.parse(requestJSON, duplicateKeys: .reject)
        } catch {
            throw .invalidInput("the Advanced Commerce request is not JSON: \(error)")
        }
        guard request.isObject else { throw .invalidInput("the Advanced Commerce request is not a JSON object") }
        return try jws(audience: .advancedCommerce) { claims in
            // Standard base64 with padding (Apple's libraries), not base64url.
            claims.field("request", Base64.encode(requestJSON))
        }
    }

    /// What the app hands StoreKit for an Advanced Commerce in-app request:
    /// `{"signatureInfo":{"token":"<JWS>"}}` as UTF-8.
    public func advancedCommerceData(requestJSON: [UInt8]) throws(OfferSignatureError) -> [UInt8] {
        let token = try advancedCommerceInAppRequest(requestJSON: requestJSON)
        var data = JSONText(reserving: token.utf8.count + 40)
        data.beginObject()
        data.key("signatureInfo")
        data.beginObject()
        data.field("token", token)
        data.endObject()
        data.endObject()
        return data.bytes
    }
}

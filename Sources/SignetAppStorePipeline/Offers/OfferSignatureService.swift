public import AppStoreModels
import Foundation
public import SignetAppStoreAPI
import SignetCore
public import SignetState

/// Signs offers for the app's backend only when Signet's state says the customer may have
/// them (``OfferEligibility``), and says why not otherwise: what `POST /v1/offers/signature`
/// answers. Transport-agnostic and blocking (store reads): call it off the event loops.
///
/// | Status | Body |
/// |---|---|
/// | 200 | `{"eligible": true, "offer", "productId", …, "signature": JWS}` (`signatureV1` for `signature: v1`), or `{"eligible": false, "reason", "detail"}` |
/// | 400 | `{"error"}`: not such a request (a missing field, an unknown offer) |
/// | 503 | `{"error"}`: no In-App Purchase key configured, or the store failed |
public struct OfferSignatureService: Sendable {
    private let store: @Sendable () throws -> any StateStore
    private let signer: Result<OfferSigner, any Error>

    /// - Parameters:
    ///   - store: where purchases and consent are read.
    ///   - signer: the In-App Purchase key's signer, or why there is none (said in the 503).
    public init(store: @escaping @Sendable () throws -> any StateStore, signer: Result<OfferSigner, any Error>) {
        self.store = store
        self.signer = signer
    }

    /// The status and JSON body answering one request body.
    public func respond(to body: [UInt8]) -> (status: Int, json: [UInt8]) {
        let request: OfferSignatureRequest
        do {
            request = try JSONDecoder().decode(OfferSignatureRequest.self, from: Data(body))
        } catch {
            return Self.error(400, "the body must be a JSON object with offer (promotional, win_back or introductory) and productId: \(Self.why(error))")
        }
        guard !request.productId.isEmpty else { return Self.error(400, "productId is empty") }
        let version = request.signature ?? "v2"
        guard ["v1", "v2"].contains(version), version == "v2" || request.offer != .introductory else {
            return Self.error(400, "signature is v2 or v1 (v1 for promotional and win_back offers only)")
        }
        let signer: OfferSigner
        switch self.signer {
        case .success(let made): signer = made
        case .failure(let why): return Self.error(503, "no In-App Purchase key to sign with: \(why)")
        }
        do {
            let store = try self.store()
            switch request.offer {
            case .promotional, .winBack:
                guard let offerIdentifier = request.offerIdentifier, !offerIdentifier.isEmpty else {
                    return Self.error(400, "offerIdentifier is required for a \(request.offer.rawValue) offer")
                }
                guard let id = request.originalTransactionId, !id.isEmpty else {
                    return Self.error(400, "originalTransactionId (the customer's purchase) is required for a \(request.offer.rawValue) offer")
                }
                let purchase = try store.subscription(originalTransactionId: id)
                let decision = OfferEligibility.decide(request.offer, purchase: purchase, restricted: try restricted(purchase, store))
                guard decision.isEligible, let purchase else { return Self.refused(decision) }
                var json = Self.start(request)
                json.field("offerIdentifier", offerIdentifier)
                json.field("originalTransactionId", id)
                if version == "v1" {
                    let signed = try signer.promotionalOfferV1(
                        productId: request.productId, offerIdentifier: offerIdentifier, appAccountToken: purchase.appAccountToken)
                    json.key("signatureV1")
                    json.beginObject()
                    json.field("keyIdentifier", signed.keyIdentifier)
                    json.field("nonce", signed.nonce.uuidString.lowercased())
                    json.field("timestamp", signed.timestamp)
                    json.field("signature", signed.signature)
                    json.field("appAccountToken", purchase.appAccountToken?.description)
                    json.endObject()
                } else {
                    json.field("signature", try signer.promotionalOfferV2(
                        productId: request.productId, offerIdentifier: offerIdentifier, transactionId: id))
                }
                json.field("detail", decision.detail)
                json.endObject()
                return (200, json.bytes)
            case .introductory:
                let id = request.originalTransactionId.flatMap { $0.isEmpty ? nil : $0 }
                guard request.appAccountToken != nil || id != nil else {
                    return Self.error(400, "appAccountToken or originalTransactionId (whose purchases to judge by) is required for an introductory offer")
                }
                guard let transactionId = request.transactionId ?? id, !transactionId.isEmpty else {
                    return Self.error(400, "transactionId (the customer's appTransactionId or any transaction) or originalTransactionId is required")
                }
                var purchases: [SubscriptionSnapshot] = []
                if let text = request.appAccountToken {
                    guard let token = AppAccountToken(text) else { return Self.error(400, "appAccountToken '\(text)' is not a UUID") }
                    purchases += try store.subscriptions(appAccountToken: token)
                }
                if let id {
                    // The purchase named must be one Signet knows, and not refunded (as for every offer).
                    let purchase = try store.subscription(originalTransactionId: id)
                    let named = OfferEligibility.decide(.introductory, purchase: purchase, restricted: try restricted(purchase, store))
                    guard named.isEligible, let purchase else { return Self.refused(named) }
                    if !purchases.contains(where: { $0.originalTransactionId == id }) { purchases.append(purchase) }
                }
                // The named purchase was judged above; the account's others are read once each, up to the first restriction.
                let isRestricted = try purchases.contains { try $0.originalTransactionId != id && restricted($0, store) }
                let decision = OfferEligibility.introductory(
                    productId: request.productId, group: request.subscriptionGroupIdentifier, purchases: purchases, restricted: isRestricted)
                guard decision.isEligible else { return Self.refused(decision) }
                var json = Self.start(request)
                json.field("transactionId", transactionId)
                json.field("signature", try signer.introductoryOfferEligibility(
                    productId: request.productId, allowIntroductoryOffer: true, transactionId: transactionId))
                json.field("detail", decision.detail)
                json.endObject()
                return (200, json.bytes)
            }
        } catch let refused as OfferSignatureError {
            return Self.error(400, "\(refused)")
        } catch {
            return Self.error(503, "the state store is not available")
        }
    }

    /// Whether the purchase's app transaction has a consent restriction in force.
    private func restricted(_ purchase: SubscriptionSnapshot?, _ store: any StateStore) throws -> Bool {
        guard let app = purchase?.appTransactionId else { return false }
        return try store.consentRestriction(appTransactionId: app)?.isInForce ?? false
    }

    private static func start(_ request: OfferSignatureRequest) -> JSONText {
        var json = JSONText()
        json.beginObject()
        json.field("eligible", true)
        json.field("offer", request.offer.rawValue)
        json.field("productId", request.productId)
        return json
    }

    private static func refused(_ decision: OfferEligibility) -> (status: Int, json: [UInt8]) {
        var json = JSONText()
        json.beginObject()
        json.field("eligible", false)
        json.field("reason", decision.reason)
        json.field("detail", decision.detail)
        json.endObject()
        return (200, json.bytes)
    }

    private static func error(_ status: Int, _ message: String) -> (status: Int, json: [UInt8]) {
        var json = JSONText()
        json.beginObject()
        json.field("error", message)
        json.endObject()
        return (status, json.bytes)
    }

    private static func why(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "\(key.stringValue) is missing"
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            (context.codingPath.map(\.stringValue).joined(separator: ".") + " " + context.debugDescription).trimmingCharacters(in: .whitespaces)
        default: "not JSON"
        }
    }
}

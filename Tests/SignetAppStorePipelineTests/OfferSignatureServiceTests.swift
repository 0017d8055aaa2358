import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetOpenSSL
import SignetState
import Testing

/// `POST /v1/offers/signature`'s decisions (``OfferSignatureService``): each offer signed only
/// when the stored purchase allows it, and otherwise the reason; the signatures' claims.
@Suite("offer signatures for the app, gated on Signet's state")
struct OfferSignatureServiceTests {
    static let token = "5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6F"

    static func purchase(
        _ id: String, _ state: SubscriptionState, product: String = "pro.monthly", group: String? = "g1", revoked: Bool = false,
        app: String? = nil
    ) -> SubscriptionSnapshot {
        var snapshot = SubscriptionSnapshot(originalTransactionId: id, state: state, entitled: state == .active)
        snapshot.productId = product
        snapshot.productType = "Auto-Renewable Subscription"
        snapshot.subscriptionGroupIdentifier = group
        snapshot.appAccountToken = AppAccountToken(token)
        snapshot.appTransactionId = app
        if revoked { snapshot.revocationDate = 1_700_000_000_000 }
        return snapshot
    }

    static func service(_ snapshots: [SubscriptionSnapshot], restricted: String? = nil, signer: Bool = true) throws -> OfferSignatureService {
        let store = InMemoryStateStore()
        try store.withTransaction { transaction in
            for snapshot in snapshots { try transaction.save(snapshot) }
            if let restricted { try transaction.save(ConsentRestriction(appTransactionId: restricted, rescindedAt: 1)) }
        }
        let credentials = try AppStoreAPICredentials(
            keyId: "2X9R4HXF34", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: "com.example.signet",
            privateKey: try ECPrivateKey(generating: .p256))
        struct NoKey: Error, CustomStringConvertible { var description: String { "SIGNET_APPSTORE_KEY_ID is not set" } }
        return OfferSignatureService(store: { store }, signer: signer ? .success(OfferSigner(credentials: credentials)) : .failure(NoKey()))
    }

    static func ask(_ service: OfferSignatureService, _ body: [String: Any]) throws -> (Int, [String: Any]) {
        let (status, json) = service.respond(to: Array(try JSONSerialization.data(withJSONObject: body)))
        return (status, try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any], "\(String(decoding: json, as: UTF8.self))"))
    }

    /// The claims of a compact JWS.
    static func claims(_ jws: Any?) throws -> [String: Any] {
        let parts = try #require(jws as? String).split(separator: ".")
        try #require(parts.count == 3)
        return try #require(try JSONSerialization.jsonObject(with: Data(try Base64.decodeURL(Array(parts[1].utf8)))) as? [String: Any])
    }

    @Test("promotional: a current subscriber's purchase is signed V2 (its originalTransactionId the transactionId) or V1; anyone else gets the reason")
    func promotional() async throws {
        let service = try Self.service([
            Self.purchase("active", .active), Self.purchase("retry", .billingRetry), Self.purchase("lapsed", .expired),
            Self.purchase("refunded", .refunded, revoked: true), Self.purchase("withdrawn", .active, app: "app-1"),
        ], restricted: "app-1")
        func ask(_ id: String, _ extra: [String: Any] = [:]) throws -> (Int, [String: Any]) {
            try Self.ask(service, ["offer": "promotional", "productId": "pro.monthly", "offerIdentifier": "stay.50", "originalTransactionId": id]
                .merging(extra) { $1 })
        }
        let (status, signed) = try ask("active")
        #expect(status == 200 && signed["eligible"] as? Bool == true, "\(signed)")
        let claims = try Self.claims(signed["signature"])
        #expect(claims["aud"] as? String == "promotional-offer" && claims["productId"] as? String == "pro.monthly")
        #expect(claims["offerIdentifier"] as? String == "stay.50" && claims["transactionId"] as? String == "active" && claims["bid"] as? String == "com.example.signet")
        #expect(try ask("retry").1["eligible"] as? Bool == true)
        let v1 = try ask("active", ["signature": "v1"]).1
        let fields = try #require(v1["signatureV1"] as? [String: Any], "\(v1)")
        #expect(fields["keyIdentifier"] as? String == "2X9R4HXF34" && fields["appAccountToken"] as? String == Self.token.lowercased())
        #expect(fields["signature"] is String && (fields["nonce"] as? String).map { $0 == $0.lowercased() } == true)

        for (id, reason) in [("lapsed", "not_subscribed"), ("refunded", "refunded"), ("withdrawn", "consent_restricted"), ("nobody", "unknown_purchase")] {
            let (status, refused) = try ask(id)
            #expect(status == 200 && refused["eligible"] as? Bool == false && refused["reason"] as? String == reason, "\(id): \(refused)")
            #expect(refused["signature"] == nil && (refused["detail"] as? String)?.isEmpty == false)
        }
        #expect((try ask("lapsed").1["detail"] as? String)?.contains("win_back") == true)
    }

    @Test("win_back: only a lapsed purchase")
    func winBack() async throws {
        let service = try Self.service([Self.purchase("lapsed", .expired), Self.purchase("active", .active)])
        let body: [String: Any] = ["offer": "win_back", "productId": "pro.monthly", "offerIdentifier": "comeback"]
        let signed = try Self.ask(service, body.merging(["originalTransactionId": "lapsed"]) { $1 }).1
        let claims = try Self.claims(signed["signature"])
        #expect(signed["eligible"] as? Bool == true && claims["offerIdentifier"] as? String == "comeback")
        let refused = try Self.ask(service, body.merging(["originalTransactionId": "active"]) { $1 }).1
        #expect(refused["eligible"] as? Bool == false && refused["reason"] as? String == "not_lapsed", "\(refused)")
    }

    @Test("introductory: allowed only when the customer never subscribed in the product's group; the JWS allows it for the transaction given")
    func introductory() async throws {
        let service = try Self.service([Self.purchase("old", .expired, product: "pro.yearly", group: "g1")])
        func ask(_ extra: [String: Any]) throws -> [String: Any] {
            try Self.ask(service, ["offer": "introductory", "productId": "pro.monthly", "transactionId": "app-tx-1"].merging(extra) { $1 }).1
        }
        // A stranger (an account Signet never saw): allowed.
        let allowed = try ask(["appAccountToken": UUID().uuidString])
        #expect(allowed["eligible"] as? Bool == true, "\(allowed)")
        let claims = try Self.claims(allowed["signature"])
        #expect(claims["aud"] as? String == "introductory-offer-eligibility" && claims["allowIntroductoryOffer"] as? Bool == true)
        #expect(claims["transactionId"] as? String == "app-tx-1" && claims["productId"] as? String == "pro.monthly")
        // The account subscribed to pro.yearly in g1 (its token given upper case): pro.monthly of g1 is not for it.
        let refused = try ask(["appAccountToken": Self.token, "subscriptionGroupIdentifier": "g1"])
        #expect(refused["eligible"] as? Bool == false && refused["reason"] as? String == "subscribed_before", "\(refused)")
        // Another group: allowed; the same product bought before: refused without a group given.
        #expect(try ask(["appAccountToken": Self.token, "subscriptionGroupIdentifier": "g2"])["eligible"] as? Bool == true)
        // No group given, and the customer subscribed before: Signet does not guess (allowing overrides the App Store).
        let unknownGroup = try ask(["appAccountToken": Self.token])
        #expect(unknownGroup["eligible"] as? Bool == false && unknownGroup["reason"] as? String == "subscription_group_unknown", "\(unknownGroup)")
        let same = try Self.ask(service, ["offer": "introductory", "productId": "pro.yearly", "originalTransactionId": "old"]).1
        #expect(same["reason"] as? String == "subscribed_before", "\(same)")
        // The purchase named must be one Signet knows.
        let unknown = try Self.ask(service, ["offer": "introductory", "productId": "pro.monthly", "originalTransactionId": "nobody"]).1
        #expect(unknown["eligible"] as? Bool == false && unknown["reason"] as? String == "unknown_purchase", "\(unknown)")
    }

    @Test("bad requests say what is wrong (400); without a key, 503 saying which variable")
    func refusals() async throws {
        let service = try Self.service([Self.purchase("active", .active)])
        for body: [String: Any] in [
            ["productId": "p"], ["offer": "free", "productId": "p"], ["offer": "promotional", "productId": "p", "originalTransactionId": "active"],
            ["offer": "promotional", "productId": "p", "offerIdentifier": "o"], ["offer": "introductory", "productId": "p"],
            ["offer": "introductory", "productId": "p", "transactionId": "t", "signature": "v1"],
            ["offer": "introductory", "productId": "p", "transactionId": "t"],
            ["offer": "introductory", "productId": "p", "transactionId": "t", "appAccountToken": "not-a-uuid"],
            ["offer": "promotional", "productId": "", "offerIdentifier": "o", "originalTransactionId": "active"],
        ] {
            let (status, answer) = try Self.ask(service, body)
            #expect(status == 400 && (answer["error"] as? String)?.isEmpty == false, "\(body): \(answer)")
        }
        #expect(service.respond(to: Array("not json".utf8)).status == 400)
        let keyless = try Self.service([Self.purchase("active", .active)], signer: false)
        let (status, answer) = try Self.ask(keyless, ["offer": "promotional", "productId": "p", "offerIdentifier": "o", "originalTransactionId": "active"])
        #expect(status == 503 && (answer["error"] as? String)?.contains("SIGNET_APPSTORE_KEY_ID") == true, "\(answer)")
    }
}

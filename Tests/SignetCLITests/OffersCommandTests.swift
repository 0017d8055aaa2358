import Foundation
import SignetTestSupport
import Testing

/// `signet offers sign`: the command an operator tries a key and an offer with. The signatures
/// themselves are checked against Apple's rules by an independent verifier in
/// SignetAppStoreAPITests/OfferSignatureAcceptanceTests; here, the shell around them.
@Suite("signet offers sign")
struct OffersCommandTests {
    struct Bed {
        let directory: TemporaryDirectory
        let environment: [String: String]

        init() throws {
            directory = try TemporaryDirectory(prefix: "signet-offers")
            let key = directory.path("SubscriptionKey_2X9R4HXF34.p8")
            let made = try SignetProcess.run(
                executable: ChildProcess.env,
                ["sh", "-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > '\(key)'"])
            try #require(made.exitCode == 0, "\(made.stderr)")
            environment = [
                "SIGNET_APPSTORE_KEY_ID": "2X9R4HXF34", "SIGNET_APPSTORE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a",
                "SIGNET_APPSTORE_PRIVATE_KEY": key, "SIGNET_BUNDLE_ID": "com.example.app",
            ]
        }

        func signet(_ arguments: [String], environment extra: [String: String]? = nil, stdin: String = "") throws -> SignetProcess.Result {
            try SignetProcess.run(["offers", "sign"] + arguments, stdin: Data(stdin.utf8), environment: extra ?? environment)
        }
    }

    static func claims(_ jws: String) throws -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("each kind prints what StoreKit takes: a JWS with the feature's aud, V1's four values, the Advanced Commerce wrapper")
    func kinds() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }

        let promotional = try bed.signet(["promotional", "--product", "com.example.monthly", "--offer", "winback.50", "--transaction", "2000000123", "--decode"])
        #expect(promotional.exitCode == 0, "\(promotional.stderr)")
        let claims = try Self.claims(promotional.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(claims["aud"] as? String == "promotional-offer")
        #expect(claims["productId"] as? String == "com.example.monthly")
        #expect(claims["transactionId"] as? String == "2000000123")
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(promotional.stderr.contains("header: {\"alg\":\"ES256\",\"kid\":\"2X9R4HXF34\",\"typ\":\"JWT\"}"), "\(promotional.stderr)")

        let introductory = try bed.signet(["introductory", "--product", "com.example.monthly", "--transaction", "2000000123", "--deny"])
        #expect(introductory.exitCode == 0, "\(introductory.stderr)")
        let eligibility = try Self.claims(introductory.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(eligibility["aud"] as? String == "introductory-offer-eligibility")
        #expect(eligibility["allowIntroductoryOffer"] as? Bool == false)

        let v1 = try bed.signet([
            "promotional-v1", "--product", "com.example.monthly", "--offer", "winback.50",
            "--app-account-token", "7E3FB20B-4CDB-47CC-936D-99D65F608138", "--nonce", "20FBA8A0-2B80-4A7D-A17F-85C1854727F8",
        ])
        #expect(v1.exitCode == 0, "\(v1.stderr)")
        let signature = try #require(try JSONSerialization.jsonObject(with: v1.stdout) as? [String: Any])
        #expect(Set(signature.keys) == ["keyIdentifier", "nonce", "timestamp", "signature"])
        #expect(signature["nonce"] as? String == "20fba8a0-2b80-4a7d-a17f-85c1854727f8")
        #expect(signature["keyIdentifier"] as? String == "2X9R4HXF34")

        let request = #"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","currency":"USD","item":{"SKU":"BOOK","price":4990}}"#
        let commerce = try bed.signet(["advanced-commerce", "--request", "-"], stdin: request)
        #expect(commerce.exitCode == 0, "\(commerce.stderr)")
        let wrapper = try #require(try JSONSerialization.jsonObject(with: commerce.stdout) as? [String: [String: String]])
        let token = try #require(wrapper["signatureInfo"]?["token"])
        #expect(try Self.claims(token)["request"] as? String == Data(request.utf8).base64EncodedString())
    }

    @Test("a missing option, a bad UUID, a request that is not JSON or no key configured: exit 2 with the reason, nothing printed")
    func refusals() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let cases: [(arguments: [String], environment: [String: String]?, says: String)] = [
            (["promotional", "--offer", "o"], nil, "promotional needs --product"),
            (["introductory", "--product", "p", "--transaction", "1"], nil, "exactly one of --allow and --deny"),
            (["promotional-v1", "--product", "p", "--offer", "o", "--app-account-token", "not-a-uuid"], nil, "is not a UUID"),
            (["promotional", "--product", " ", "--offer", "o"], nil, "productId is empty"),
            (["advanced-commerce", "--request", "-"], nil, "not JSON"),
            (["promotional", "--product", "p", "--offer", "o"], ["SIGNET_BUNDLE_ID": "com.example.app"], "SIGNET_APPSTORE"),
        ]
        for (arguments, environment, says) in cases {
            let result = try bed.signet(arguments, environment: environment, stdin: "[1,2")
            #expect(result.exitCode == 2, "\(arguments): \(result.exitCode) \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
    }
}

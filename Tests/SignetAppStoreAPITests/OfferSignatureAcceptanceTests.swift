import AppStoreModels
import Foundation
import SignetAppStoreAPI
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Acceptance tests for `OfferSigner`, written from Apple's rules (docs/offers.md and its
/// checklist) without reading the implementation. Every artifact is checked by Python's
/// `cryptography` package against the public key derived from the PEM: base64, JSON and
/// signatures are decoded and verified there, never with Signet's code.
@Suite(
    "Offer signatures follow Apple's rules, checked independently with Python's cryptography",
    .enabled(if: Python.canImport(["cryptography"]), "python3 cannot import cryptography"))
struct OfferSignatureAcceptanceTests {
    static let keyId = "2X9R4HXF34"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.example.testbundleid"
    /// The fixed clock: a half second, so seconds and milliseconds are both told apart.
    static let clockSeconds = 1_741_043_663.5
    static let clock = Date(timeIntervalSince1970: clockSeconds)
    static let clockMilliseconds = 1_741_043_663_500
    /// Foundation spells it upper case; Apple's examples (and Signet's checklist) are lower case.
    static let injectedNonce = UUID(uuidString: "CFB43594-4F92-4FE2-8B06-D947A848ADAA")!

    // MARK: - Fixture

    /// One verdict of the Python verifier.
    struct Verdict {
        var label: String
        var failures: [String]
        var nonce: String?
    }

    /// A fresh In-App Purchase key (PKCS#8 PEM, P-256, made by Python) in a temporary directory.
    struct Bed {
        let directory: TemporaryDirectory
        let keyPath: String
        let credentials: AppStoreAPICredentials

        init() throws {
            directory = try TemporaryDirectory(prefix: "offer-acceptance")
            keyPath = directory.path("SubscriptionKey_\(OfferSignatureAcceptanceTests.keyId).p8")
            let pem = try Self.generateKey(curve: "P-256", at: keyPath)
            try #require(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            credentials = try AppStoreAPICredentials(
                keyId: OfferSignatureAcceptanceTests.keyId, issuerId: OfferSignatureAcceptanceTests.issuerId,
                bundleId: OfferSignatureAcceptanceTests.bundleId, privateKeyPEM: pem)
        }

        /// Writes a new PKCS#8 PEM EC key on `curve` ("P-256" or "P-384") to `path`; returns the PEM.
        static func generateKey(curve: String, at path: String) throws -> String {
            let script = """
                import sys
                from cryptography.hazmat.primitives import serialization
                from cryptography.hazmat.primitives.asymmetric import ec
                curve = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1()}[sys.argv[1]]
                key = ec.generate_private_key(curve)
                with open(sys.argv[2], "wb") as handle:
                    handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
                """
            let result = try Python.run(script, arguments: [curve, path])
            try #require(result.status == 0, "key generation failed: \(result.output)")
            return try String(contentsOfFile: path, encoding: .utf8)
        }

        /// A signer on the fixed clock; with the injected nonce source, or the default one.
        func signer(injectedNonce: Bool = true) -> OfferSigner {
            if injectedNonce {
                return OfferSigner(
                    credentials: credentials, now: { OfferSignatureAcceptanceTests.clock },
                    nonce: { OfferSignatureAcceptanceTests.injectedNonce })
            }
            return OfferSigner(credentials: credentials, now: { OfferSignatureAcceptanceTests.clock })
        }

        /// Runs the Python verifier on `items` (see `verifierScript`), one verdict per item.
        func verify(_ items: [[String: Any]]) throws -> [Verdict] {
            let job: [String: Any] = [
                "keyPath": keyPath, "keyId": OfferSignatureAcceptanceTests.keyId,
                "issuerId": OfferSignatureAcceptanceTests.issuerId, "bundleId": OfferSignatureAcceptanceTests.bundleId,
                "clockSeconds": OfferSignatureAcceptanceTests.clockSeconds, "items": items,
            ]
            let jobPath = directory.path("job-\(UUID().uuidString).json")
            let outPath = jobPath + ".out"
            try JSONSerialization.data(withJSONObject: job).write(to: URL(fileURLWithPath: jobPath))
            let result = try Python.run(OfferSignatureAcceptanceTests.verifierScript, arguments: [jobPath, outPath])
            try #require(result.status == 0, "the verifier failed to run: \(result.output)")
            let raw = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: outPath)))
            let verdicts = try #require(raw as? [[String: Any]])
            try #require(verdicts.count == items.count)
            return verdicts.map {
                Verdict(label: $0["label"] as? String ?? "?", failures: $0["failures"] as? [String] ?? ["no failures list"],
                        nonce: $0["nonce"] as? String)
            }
        }

        /// Verifies `items` and records an issue for every failure the verifier reports.
        @discardableResult
        func expectValid(_ items: [[String: Any]], sourceLocation: SourceLocation = #_sourceLocation) throws -> [Verdict] {
            let verdicts = try verify(items)
            for verdict in verdicts {
                for failure in verdict.failures {
                    Issue.record("\(verdict.label): \(failure)", sourceLocation: sourceLocation)
                }
            }
            return verdicts
        }
    }

    /// A compact JWS item for the verifier: `claims` are the feature claims expected exactly
    /// (values and JSON types); the base claims are checked against the fixture.
    static func jws(
        _ label: String, _ token: String, aud: String, claims: [String: Any], nonce: UUID? = nil,
        nonceV4: Bool = false, request: [UInt8]? = nil, requestExpected: String? = nil
    ) -> [String: Any] {
        var item: [String: Any] = ["kind": "jws", "label": label, "token": token, "aud": aud, "claims": claims, "nonceV4": nonceV4]
        if let nonce { item["nonce"] = nonce.uuidString }
        if let request { item["request"] = request.map { Int($0) } }
        if let requestExpected { item["requestExpected"] = requestExpected }
        return item
    }

    /// A V1 item: the verifier rebuilds the U+2063 message from the spec and the given inputs.
    static func v1(
        _ label: String, _ signature: PromotionalOfferV1Signature, productId: String, offerIdentifier: String,
        appAccountToken: String?, expectedNonce: UUID?
    ) throws -> [String: Any] {
        let json = String(decoding: try JSONEncoder().encode(signature), as: UTF8.self)
        var item: [String: Any] = [
            "kind": "v1", "label": label, "json": json, "keyIdentifier": signature.keyIdentifier,
            "nonce": signature.nonce.uuidString, "timestamp": Int(signature.timestamp), "signature": signature.signature,
            "productId": productId, "offerIdentifier": offerIdentifier, "expectedTimestamp": clockMilliseconds,
        ]
        if let appAccountToken { item["appAccountToken"] = appAccountToken }
        if let expectedNonce { item["expectedNonce"] = expectedNonce.uuidString }
        return item
    }

    /// Expects `body` to throw `OfferSignatureError.invalidInput`.
    static func expectInvalidInput<R>(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R
    ) {
        do {
            let value = try body()
            Issue.record("\(what): accepted (\(value)); expected OfferSignatureError.invalidInput", sourceLocation: sourceLocation)
        } catch let error as OfferSignatureError {
            guard case .invalidInput = error else {
                Issue.record("\(what): threw \(error); expected .invalidInput", sourceLocation: sourceLocation)
                return
            }
        } catch {
            Issue.record("\(what): threw \(error); expected OfferSignatureError.invalidInput", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Promotional offer V2

    @Test("promotional offer V2: Apple's header, base claims, productId/offerIdentifier/transactionId as strings, no exp, a raw R||S that verifies")
    func promotionalOfferV2() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        #expect(signer.keyId == Self.keyId)
        let token = try signer.promotionalOfferV2(
            productId: "com.example.product", offerIdentifier: "com.example.product.offer", transactionId: "1000011859217")
        try bed.expectValid([
            Self.jws(
                "V2 with transactionId", token, aud: "promotional-offer",
                claims: ["productId": "com.example.product", "offerIdentifier": "com.example.product.offer", "transactionId": "1000011859217"],
                nonce: Self.injectedNonce)
        ])
    }

    @Test("promotional offer V2 without a transactionId leaves the claim out (no null, no empty string)")
    func promotionalOfferV2WithoutTransaction() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        let omitted = try signer.promotionalOfferV2(productId: "com.example.product", offerIdentifier: "com.example.product.offer")
        let explicitNil = try signer.promotionalOfferV2(
            productId: "com.example.product", offerIdentifier: "com.example.product.offer", transactionId: nil)
        let claims: [String: Any] = ["productId": "com.example.product", "offerIdentifier": "com.example.product.offer"]
        try bed.expectValid([
            Self.jws("V2 default transactionId", omitted, aud: "promotional-offer", claims: claims, nonce: Self.injectedNonce),
            Self.jws("V2 transactionId: nil", explicitNil, aud: "promotional-offer", claims: claims, nonce: Self.injectedNonce),
        ])
    }

    @Test("strings are JSON-escaped into the claims, not spliced: the token decodes to exactly the input (or the input is refused)")
    func jsonEscaping() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let productId = #"com.example."quoted"\back/slash"#
        let offerIdentifier = "offer\u{2028}é</script>"
        do {
            let token = try bed.signer().promotionalOfferV2(productId: productId, offerIdentifier: offerIdentifier, transactionId: "42")
            try bed.expectValid([
                Self.jws(
                    "V2 with characters JSON must escape", token, aud: "promotional-offer",
                    claims: ["productId": productId, "offerIdentifier": offerIdentifier, "transactionId": "42"],
                    nonce: Self.injectedNonce)
            ])
        } catch let error as OfferSignatureError {
            // Refusing unusual identifiers is allowed; failing to sign is not.
            guard case .invalidInput = error else {
                Issue.record("threw \(error); expected a token or .invalidInput")
                return
            }
        }
    }

    // MARK: - Introductory offer eligibility

    @Test("introductory offer eligibility: aud, productId, allowIntroductoryOffer a JSON boolean (true and false), transactionId a string")
    func introductoryOfferEligibility() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        let allow = try signer.introductoryOfferEligibility(
            productId: "com.example.product", allowIntroductoryOffer: true, transactionId: "1000011859217")
        let block = try signer.introductoryOfferEligibility(
            productId: "com.example.product", allowIntroductoryOffer: false, transactionId: "1000011859217")
        try bed.expectValid([
            Self.jws(
                "eligibility true", allow, aud: "introductory-offer-eligibility",
                claims: ["productId": "com.example.product", "allowIntroductoryOffer": true, "transactionId": "1000011859217"],
                nonce: Self.injectedNonce),
            Self.jws(
                "eligibility false", block, aud: "introductory-offer-eligibility",
                claims: ["productId": "com.example.product", "allowIntroductoryOffer": false, "transactionId": "1000011859217"],
                nonce: Self.injectedNonce),
        ])
    }

    // MARK: - Advanced Commerce

    /// The checklist's worked example: compact JSON and its standard base64.
    static let workedExampleJSON = #"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","requestInfo":{"requestReferenceId":"f55df048-4cd8-4261-b404-b6f813ff70e5"},"currency":"USD","taxCode":"C003-00-2","storefront":"USA","item":{"SKU":"BOOK_SHERLOCK_HOMLES","displayName":"Sherlock Holmes","description":"The Sherlock Holmes, 5th Edition","price":4990}}"#
    static let workedExampleBase64 = "eyJvcGVyYXRpb24iOiJDUkVBVEVfT05FX1RJTUVfQ0hBUkdFIiwidmVyc2lvbiI6IjEiLCJyZXF1ZXN0SW5mbyI6eyJyZXF1ZXN0UmVmZXJlbmNlSWQiOiJmNTVkZjA0OC00Y2Q4LTQyNjEtYjQwNC1iNmY4MTNmZjcwZTUifSwiY3VycmVuY3kiOiJVU0QiLCJ0YXhDb2RlIjoiQzAwMy0wMC0yIiwic3RvcmVmcm9udCI6IlVTQSIsIml0ZW0iOnsiU0tVIjoiQk9PS19TSEVSTE9DS19IT01MRVMiLCJkaXNwbGF5TmFtZSI6IlNoZXJsb2NrIEhvbG1lcyIsImRlc2NyaXB0aW9uIjoiVGhlIFNoZXJsb2NrIEhvbG1lcywgNXRoIEVkaXRpb24iLCJwcmljZSI6NDk5MH19"
    /// Pretty-printed, non-ASCII, and chosen so its standard base64 has `+`, `/` and `=` padding.
    static let prettyRequestJSON =
        "{\n  \"operation\": \"CREATE_ONE_TIME_CHARGE\",\n  \"version\": \"1\",\n"
        + "  \"requestInfo\": {\"requestReferenceId\": \"f55df048-4cd8-4261-b404-b6f813ff70e5\"},\n"
        + "  \"currency\": \"EUR\",\n  \"taxCode\": \"C003-00-2\",\n  \"storefront\": \"FRA\",\n"
        + "  \"item\": {\"SKU\": \"BOOK_ZOLA\", \"displayName\": \"Zola — Thérèse Raquin???>>>\", \"description\": \"Édition illustrée\", \"price\": 4990}\n}"

    @Test("Advanced Commerce in-app request: aud advanced-commerce-api, only the base claims and request, request = the worked example's standard base64")
    func advancedCommerceWorkedExample() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let input = Array(Self.workedExampleJSON.utf8)
        let token = try bed.signer().advancedCommerceInAppRequest(requestJSON: input)
        try bed.expectValid([
            Self.jws(
                "AC worked example", token, aud: "advanced-commerce-api", claims: [:], nonce: Self.injectedNonce,
                request: input, requestExpected: Self.workedExampleBase64)
        ])
    }

    @Test("Advanced Commerce: request is standard base64 with padding of exactly the input bytes (whitespace and UTF-8 kept, not re-serialised)")
    func advancedCommerceExactBytes() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let input = Array(Self.prettyRequestJSON.utf8)
        // The test data exercises what base64url would get wrong (checked with Foundation, not Signet).
        let standard = Data(input).base64EncodedString()
        #expect(standard.contains("+") && standard.contains("/") && standard.hasSuffix("="))
        let token = try bed.signer().advancedCommerceInAppRequest(requestJSON: input)
        try bed.expectValid([
            Self.jws("AC pretty-printed request", token, aud: "advanced-commerce-api", claims: [:], nonce: Self.injectedNonce, request: input)
        ])
    }

    @Test("advancedCommerceData is exactly {\"signatureInfo\":{\"token\":<JWS>}} and the token is a valid Advanced Commerce JWS")
    func advancedCommerceData() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        for (label, json) in [("worked example", Self.workedExampleJSON), ("pretty", Self.prettyRequestJSON)] {
            let input = Array(json.utf8)
            let data = try bed.signer().advancedCommerceData(requestJSON: input)
            var item = Self.jws("AC data (\(label))", "", aud: "advanced-commerce-api", claims: [:], nonce: Self.injectedNonce, request: input)
            item["kind"] = "wrapper"
            item["data"] = data.map { Int($0) }
            try bed.expectValid([item])
        }
    }

    // MARK: - Nonces

    @Test("with the default nonce source every JWS carries a fresh lower-case UUIDv4 nonce, different on every call")
    func freshNonces() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer(injectedNonce: false)
        let input = Array(Self.workedExampleJSON.utf8)
        var items: [[String: Any]] = []
        for index in 0..<3 {
            items.append(Self.jws(
                "V2 #\(index)", try signer.promotionalOfferV2(productId: "p", offerIdentifier: "o", transactionId: "1"),
                aud: "promotional-offer", claims: ["productId": "p", "offerIdentifier": "o", "transactionId": "1"], nonceV4: true))
            items.append(Self.jws(
                "eligibility #\(index)",
                try signer.introductoryOfferEligibility(productId: "p", allowIntroductoryOffer: index % 2 == 0, transactionId: "1"),
                aud: "introductory-offer-eligibility",
                claims: ["productId": "p", "allowIntroductoryOffer": index % 2 == 0, "transactionId": "1"], nonceV4: true))
            items.append(Self.jws(
                "AC #\(index)", try signer.advancedCommerceInAppRequest(requestJSON: input),
                aud: "advanced-commerce-api", claims: [:], nonceV4: true, request: input))
        }
        var wrapper = Self.jws("AC data", "", aud: "advanced-commerce-api", claims: [:], nonceV4: true, request: input)
        wrapper["kind"] = "wrapper"
        wrapper["data"] = try signer.advancedCommerceData(requestJSON: input).map { Int($0) }
        items.append(wrapper)
        let verdicts = try bed.expectValid(items)
        let nonces = verdicts.compactMap(\.nonce)
        #expect(nonces.count == items.count)
        #expect(Set(nonces).count == nonces.count, "nonces repeat: \(nonces)")
        #expect(!nonces.contains(Self.injectedNonce.uuidString.lowercased()))
    }

    // MARK: - Promotional offer V1

    @Test("V1: base64 DER ECDSA-SHA256 over the U+2063-joined fields (appAccountToken and nonce lower case), timestamp in ms, keyIdentifier; JSON form")
    func promotionalOfferV1() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        let upperToken = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        let token = try #require(AppAccountToken(upperToken))
        let nonce = try #require(UUID(uuidString: "20FBA8A0-2B80-4A7D-A17F-85C1854727F8"))
        let signature = try signer.promotionalOfferV1(
            productId: "com.example.monthly", offerIdentifier: "promo.returning", appAccountToken: token, nonce: nonce)
        #expect(signature.nonce == nonce)
        #expect(signature.keyIdentifier == Self.keyId)
        #expect(signature.timestamp == Int64(Self.clockMilliseconds))
        let fromUUID = try signer.promotionalOfferV1(
            productId: "com.example.monthly", offerIdentifier: "promo.returning",
            appAccountToken: AppAccountToken(try #require(UUID(uuidString: upperToken))), nonce: nonce)
        try bed.expectValid([
            try Self.v1(
                "V1 upper-case token input", signature, productId: "com.example.monthly", offerIdentifier: "promo.returning",
                appAccountToken: upperToken, expectedNonce: nonce),
            try Self.v1(
                "V1 token from a UUID", fromUUID, productId: "com.example.monthly", offerIdentifier: "promo.returning",
                appAccountToken: upperToken, expectedNonce: nonce),
        ])
    }

    @Test("V1 without appAccountToken signs an empty fifth field; without a nonce it makes a fresh one per signature")
    func promotionalOfferV1Defaults() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer(injectedNonce: false)
        let given = try #require(UUID(uuidString: "20FBA8A0-2B80-4A7D-A17F-85C1854727F8"))
        let noToken = try signer.promotionalOfferV1(productId: "com.example.monthly", offerIdentifier: "promo.returning", nonce: given)
        let first = try signer.promotionalOfferV1(productId: "com.example.monthly", offerIdentifier: "promo.returning")
        let second = try signer.promotionalOfferV1(productId: "com.example.monthly", offerIdentifier: "promo.returning")
        #expect(noToken.nonce == given)
        #expect(first.nonce != second.nonce)
        try bed.expectValid([
            try Self.v1("V1 no token", noToken, productId: "com.example.monthly", offerIdentifier: "promo.returning", appAccountToken: nil, expectedNonce: given),
            try Self.v1("V1 own nonce #1", first, productId: "com.example.monthly", offerIdentifier: "promo.returning", appAccountToken: nil, expectedNonce: nil),
            try Self.v1("V1 own nonce #2", second, productId: "com.example.monthly", offerIdentifier: "promo.returning", appAccountToken: nil, expectedNonce: nil),
        ])
    }

    // MARK: - Refusals

    @Test("empty or whitespace productId, offerIdentifier or transactionId is refused with invalidInput")
    func blankInputsRefused() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        for blank in ["", " ", "   ", "\t", "\n", " \t\n "] {
            let shown = blank.debugDescription
            Self.expectInvalidInput("V2 productId \(shown)") {
                try signer.promotionalOfferV2(productId: blank, offerIdentifier: "o", transactionId: "1")
            }
            Self.expectInvalidInput("V2 offerIdentifier \(shown)") {
                try signer.promotionalOfferV2(productId: "p", offerIdentifier: blank, transactionId: "1")
            }
            Self.expectInvalidInput("V2 transactionId \(shown)") {
                try signer.promotionalOfferV2(productId: "p", offerIdentifier: "o", transactionId: blank)
            }
            Self.expectInvalidInput("eligibility productId \(shown)") {
                try signer.introductoryOfferEligibility(productId: blank, allowIntroductoryOffer: true, transactionId: "1")
            }
            Self.expectInvalidInput("eligibility transactionId \(shown)") {
                try signer.introductoryOfferEligibility(productId: "p", allowIntroductoryOffer: false, transactionId: blank)
            }
            Self.expectInvalidInput("V1 productId \(shown)") {
                try signer.promotionalOfferV1(productId: blank, offerIdentifier: "o")
            }
            Self.expectInvalidInput("V1 offerIdentifier \(shown)") {
                try signer.promotionalOfferV1(productId: "p", offerIdentifier: blank)
            }
        }
    }

    @Test("an Advanced Commerce request that is not a JSON object (not JSON, an array, a scalar) or has duplicate keys is refused")
    func badAdvancedCommerceRequestsRefused() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("not JSON", Array("not json".utf8)),
            ("truncated object", Array(#"{"operation":"CREATE_ONE_TIME_CHARGE""#.utf8)),
            ("trailing garbage", Array(#"{"a":1} x"#.utf8)),
            ("two objects", Array(#"{"a":1}{"b":2}"#.utf8)),
            ("invalid UTF-8", [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]),  // {"a":"\xFF"}
            ("JSON array", Array(#"[{"operation":"CREATE_ONE_TIME_CHARGE"}]"#.utf8)),
            ("empty array", Array("[]".utf8)),
            ("JSON string", Array(#""{}""#.utf8)),
            ("JSON number", Array("42".utf8)),
            ("JSON null", Array("null".utf8)),
            ("duplicate top-level key", Array(#"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","version":"2"}"#.utf8)),
            ("duplicate nested key", Array(#"{"operation":"CREATE_ONE_TIME_CHARGE","item":{"price":4990,"price":1}}"#.utf8)),
        ]
        for (label, bytes) in cases {
            Self.expectInvalidInput("advancedCommerceInAppRequest: \(label)") {
                try signer.advancedCommerceInAppRequest(requestJSON: bytes)
            }
            Self.expectInvalidInput("advancedCommerceData: \(label)") {
                try signer.advancedCommerceData(requestJSON: bytes)
            }
        }
    }

    @Test("a key that is not P-256 (a P-384 PKCS#8 PEM) is refused by AppStoreAPICredentials")
    func p384Refused() throws {
        let directory = try TemporaryDirectory(prefix: "offer-acceptance")
        defer { directory.remove() }
        let pem = try Bed.generateKey(curve: "P-384", at: directory.path("p384.p8"))
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(throws: AppStoreAPIConfigurationError.self) {
            try AppStoreAPICredentials(keyId: Self.keyId, issuerId: Self.issuerId, bundleId: Self.bundleId, privateKeyPEM: pem)
        }
    }

    // MARK: - The verifier can fail

    @Test("the independent verifier rejects a JWS with a changed payload, a JWS from another key and a V1 signature over another message")
    func verifierRejectsTampering() throws {
        let bed = try Bed()
        defer { bed.directory.remove() }
        let signer = bed.signer()
        let genuine = try signer.promotionalOfferV2(productId: "com.example.product", offerIdentifier: "offer", transactionId: "1")
        let other = try signer.promotionalOfferV2(productId: "com.example.premium", offerIdentifier: "offer", transactionId: "1")
        var segments = genuine.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let otherSegments = other.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(segments.count == 3 && otherSegments.count == 3)
        #expect(segments[1] != otherSegments[1])
        segments[1] = otherSegments[1]  // another genuine payload under the first signature
        let tampered = segments.joined(separator: ".")

        let stranger = try Bed()
        defer { stranger.directory.remove() }
        let foreign = try stranger.signer().promotionalOfferV2(productId: "com.example.product", offerIdentifier: "offer", transactionId: "1")

        let v1 = try signer.promotionalOfferV1(productId: "com.example.monthly", offerIdentifier: "promo", nonce: Self.injectedNonce)
        let claims: [String: Any] = ["productId": "com.example.premium", "offerIdentifier": "offer", "transactionId": "1"]
        let verdicts = try bed.verify([
            Self.jws("tampered payload", tampered, aud: "promotional-offer", claims: claims, nonce: Self.injectedNonce),
            Self.jws("foreign key", foreign, aud: "promotional-offer", claims: claims.merging(["productId": "com.example.product"]) { $1 }, nonce: Self.injectedNonce),
            try Self.v1("V1 other product", v1, productId: "com.example.yearly", offerIdentifier: "promo", appAccountToken: nil, expectedNonce: Self.injectedNonce),
            // Controls: the untouched artifacts pass the same verifier.
            Self.jws("genuine", genuine, aud: "promotional-offer", claims: claims.merging(["productId": "com.example.product"]) { $1 }, nonce: Self.injectedNonce),
            try Self.v1("V1 genuine", v1, productId: "com.example.monthly", offerIdentifier: "promo", appAccountToken: nil, expectedNonce: Self.injectedNonce),
        ])
        for verdict in verdicts.prefix(3) {
            #expect(verdict.failures == ["signature does not verify"], "\(verdict.label): \(verdict.failures)")
        }
        for verdict in verdicts.dropFirst(3) {
            #expect(verdict.failures.isEmpty, "\(verdict.label): \(verdict.failures)")
        }
    }

    // MARK: - The verifier

    /// Python: `verifierScript job.json out.json`. Checks every artifact per docs/offers.md and
    /// writes `[{"label", "failures": [...], "nonce"}]`.
    static let verifierScript = #"""
        import base64, binascii, json, re, sys
        from decimal import Decimal
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

        job = json.load(open(sys.argv[1], encoding="utf-8"))
        with open(job["keyPath"], "rb") as handle:
            private_key = serialization.load_pem_private_key(handle.read(), password=None)
        public_key = private_key.public_key()
        if not isinstance(public_key, ec.EllipticCurvePublicKey) or public_key.curve.name != "secp256r1":
            raise SystemExit("test key is not P-256")

        LOWER_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
        B64URL = re.compile(r"^[A-Za-z0-9_-]+$")
        B64STD = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
        BASE_CLAIMS = {"iss", "iat", "aud", "bid", "nonce"}

        class Strict:
            # Parses JSON refusing duplicate keys and non-finite numbers, keeping floats apart from ints.
            def __init__(self, failures, where):
                self.failures, self.where = failures, where
            def pairs(self, pairs):
                seen = {}
                for key, value in pairs:
                    if key in seen:
                        self.failures.append(f"{self.where}: duplicate key {key!r}")
                    seen[key] = value
                return seen
            def constant(self, name):
                self.failures.append(f"{self.where}: non-standard JSON constant {name}")
                return None
            def load(self, data):
                text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
                return json.loads(text, object_pairs_hook=self.pairs, parse_float=Decimal, parse_constant=self.constant)

        def same(actual, expected):
            # Equal value AND equal JSON type (Python's bool is an int, so compare types exactly).
            return type(actual) is type(expected) and actual == expected

        def b64url_decode(segment, failures, where):
            if not B64URL.match(segment):
                failures.append(f"{where}: not unpadded base64url: {segment[:40]!r}")
                return None
            if len(segment) % 4 == 1:
                failures.append(f"{where}: impossible base64url length {len(segment)}")
                return None
            raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
            if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != segment:
                failures.append(f"{where}: non-canonical base64url")
            return raw

        def check_jws(item, token, failures):
            info = {}
            if not isinstance(token, str):
                failures.append(f"token is not a string: {token!r}")
                return info
            if token != token.strip() or any(c.isspace() for c in token):
                failures.append("token contains whitespace")
            segments = token.split(".")
            if len(segments) != 3:
                failures.append(f"JWS has {len(segments)} segments, not 3")
                return info
            header_raw = b64url_decode(segments[0], failures, "header")
            payload_raw = b64url_decode(segments[1], failures, "payload")
            signature_raw = b64url_decode(segments[2], failures, "signature")
            header = claims = None
            if header_raw is not None:
                try:
                    header = Strict(failures, "header").load(header_raw)
                except Exception as error:
                    failures.append(f"header is not JSON: {error}")
            if payload_raw is not None:
                try:
                    claims = Strict(failures, "payload").load(payload_raw)
                except Exception as error:
                    failures.append(f"payload is not JSON: {error}")
            # Signature: RFC 7518 3.4, 64 bytes R||S, over ASCII(header.payload).
            if signature_raw is not None:
                if len(signature_raw) != 64:
                    failures.append(f"signature is {len(signature_raw)} bytes, not the 64-byte R||S")
                    if signature_raw[:1] == b"\x30":
                        failures.append("signature looks like DER, which JWS forbids")
                else:
                    r = int.from_bytes(signature_raw[:32], "big")
                    s = int.from_bytes(signature_raw[32:], "big")
                    try:
                        public_key.verify(encode_dss_signature(r, s), (segments[0] + "." + segments[1]).encode("ascii"),
                                          ec.ECDSA(hashes.SHA256()))
                    except InvalidSignature:
                        failures.append("signature does not verify")
            if header is not None:
                expected_header = {"alg": "ES256", "kid": job["keyId"], "typ": "JWT"}
                if not (isinstance(header, dict) and header == expected_header
                        and all(same(header[k], v) for k, v in expected_header.items())):
                    failures.append(f"header is {header!r}, expected exactly {expected_header!r}")
            if claims is None:
                return info
            if not isinstance(claims, dict):
                failures.append(f"payload is not a JSON object: {claims!r}")
                return info
            info["nonce"] = claims.get("nonce")
            feature = item["claims"]
            expected_keys = BASE_CLAIMS | set(feature)
            if "request" in item:
                expected_keys = expected_keys | {"request"}
            if set(claims) != expected_keys:
                extra = sorted(set(claims) - expected_keys)
                missing = sorted(expected_keys - set(claims))
                failures.append(f"claim names: unexpected {extra}, missing {missing}")
            for forbidden in ("exp", "request_type", "nbf"):
                if forbidden in claims:
                    failures.append(f"forbidden claim {forbidden!r} present: {claims[forbidden]!r}")
            if not same(claims.get("iss"), job["issuerId"]):
                failures.append(f"iss is {claims.get('iss')!r}, expected {job['issuerId']!r}")
            if not same(claims.get("bid"), job["bundleId"]):
                failures.append(f"bid is {claims.get('bid')!r}, expected {job['bundleId']!r}")
            if not same(claims.get("aud"), item["aud"]):
                failures.append(f"aud is {claims.get('aud')!r}, expected {item['aud']!r}")
            iat = claims.get("iat")
            if type(iat) is not int:
                failures.append(f"iat is {iat!r} ({type(iat).__name__}), expected a JSON integer")
            elif abs(Decimal(iat) - Decimal(str(job["clockSeconds"]))) > 1:
                failures.append(f"iat {iat} is not within 1 s of the clock {job['clockSeconds']}")
            nonce = claims.get("nonce")
            if not (isinstance(nonce, str) and LOWER_UUID.match(nonce)):
                failures.append(f"nonce {nonce!r} is not a lower-case hyphenated UUID")
            elif item.get("nonce") is not None and nonce != item["nonce"].lower():
                failures.append(f"nonce {nonce!r} is not the injected nonce in lower case ({item['nonce'].lower()!r})")
            elif item.get("nonceV4") and nonce[14] != "4":
                failures.append(f"nonce {nonce!r} is not a version-4 UUID")
            for key, value in feature.items():
                if key not in claims:
                    continue
                if not same(claims[key], value):
                    failures.append(f"{key} is {claims[key]!r} ({type(claims[key]).__name__}), expected {value!r} ({type(value).__name__})")
            if "request" in item:
                request = claims.get("request")
                input_bytes = bytes(item["request"])
                expected = base64.b64encode(input_bytes).decode("ascii")
                if not isinstance(request, str):
                    failures.append(f"request is {request!r}, not a string")
                else:
                    if not (B64STD.match(request) and len(request) % 4 == 0):
                        failures.append("request is not standard base64 with padding")
                    if request != expected:
                        failures.append(f"request is {request!r}, expected standard base64 of the exact input {expected!r}")
                    try:
                        decoded = base64.b64decode(request, validate=True)
                    except (binascii.Error, ValueError) as error:
                        failures.append(f"request does not decode as standard base64: {error}")
                        decoded = None
                    if decoded is not None:
                        if decoded != input_bytes:
                            failures.append("request decodes to bytes other than the input")
                        try:
                            if Strict(failures, "request").load(decoded) != Strict(failures, "input").load(input_bytes):
                                failures.append("request decodes to JSON other than the input's")
                        except Exception as error:
                            failures.append(f"request does not decode to JSON: {error}")
                if "requestExpected" in item and request != item["requestExpected"]:
                    failures.append(f"request differs from the spec's worked example: {request!r}")
            return info

        def check_wrapper(item, failures):
            raw = bytes(item["data"])
            try:
                wrapper = Strict(failures, "wrapper").load(raw)
            except Exception as error:
                failures.append(f"advancedCommerceData is not UTF-8 JSON: {error}")
                return {}
            if not (isinstance(wrapper, dict) and set(wrapper) == {"signatureInfo"}
                    and isinstance(wrapper["signatureInfo"], dict) and set(wrapper["signatureInfo"]) == {"token"}
                    and isinstance(wrapper["signatureInfo"]["token"], str)):
                failures.append(f"advancedCommerceData is not exactly {{\"signatureInfo\":{{\"token\":<string>}}}}: {raw[:200]!r}")
                try:
                    return check_jws(item, wrapper["signatureInfo"]["token"], failures)
                except Exception:
                    return {}
            return check_jws(item, wrapper["signatureInfo"]["token"], failures)

        def check_v1(item, failures):
            nonce = item["nonce"].lower()
            token = item["appAccountToken"].lower() if item.get("appAccountToken") is not None else ""
            fields = [job["bundleId"], job["keyId"], item["productId"], item["offerIdentifier"], token, nonce, str(item["timestamp"])]
            message = "\u2063".join(fields).encode("utf-8")
            signature = item["signature"]
            if not (isinstance(signature, str) and B64STD.match(signature) and len(signature) % 4 == 0 and signature):
                failures.append(f"signature {signature!r} is not standard base64 with padding")
            else:
                der = base64.b64decode(signature, validate=True)
                try:
                    r, s = decode_dss_signature(der)
                    if encode_dss_signature(r, s) != der:
                        failures.append("signature is not canonical DER")
                except ValueError as error:
                    failures.append(f"signature is not a DER ECDSA signature: {error}")
                try:
                    public_key.verify(der, message, ec.ECDSA(hashes.SHA256()))
                except InvalidSignature:
                    failures.append("signature does not verify")
                    # Diagnose the usual slips (still failures).
                    upper = "\u2063".join(fields[:4] + [item.get("appAccountToken") or "", item["nonce"], fields[6]]).encode("utf-8")
                    try:
                        public_key.verify(der, upper, ec.ECDSA(hashes.SHA256()))
                        failures.append("it verifies over the message with the UUIDs in their input case instead")
                    except InvalidSignature:
                        pass
                except ValueError:
                    pass
            if not same(item["keyIdentifier"], job["keyId"]):
                failures.append(f"keyIdentifier is {item['keyIdentifier']!r}, expected {job['keyId']!r}")
            if "expectedTimestamp" in item and item["timestamp"] != item["expectedTimestamp"]:
                failures.append(f"timestamp {item['timestamp']} is not the clock in ms {item['expectedTimestamp']}")
            if item.get("expectedNonce") is not None and nonce != item["expectedNonce"].lower():
                failures.append(f"returned nonce {nonce} is not the given {item['expectedNonce'].lower()}")
            # The Encodable form returned to the app.
            try:
                encoded = Strict(failures, "V1 JSON").load(item["json"])
            except Exception as error:
                failures.append(f"V1 JSON form does not parse: {error}")
                return {"nonce": nonce}
            if not isinstance(encoded, dict) or set(encoded) != {"keyIdentifier", "nonce", "timestamp", "signature"}:
                failures.append(f"V1 JSON keys are {sorted(encoded) if isinstance(encoded, dict) else encoded!r}, expected keyIdentifier, nonce, timestamp, signature")
            else:
                if not same(encoded["keyIdentifier"], job["keyId"]):
                    failures.append(f"JSON keyIdentifier is {encoded['keyIdentifier']!r}")
                if not (isinstance(encoded["nonce"], str) and LOWER_UUID.match(encoded["nonce"]) and encoded["nonce"] == nonce):
                    failures.append(f"JSON nonce is {encoded['nonce']!r}, expected lower-case {nonce!r}")
                if not same(encoded["timestamp"], item["timestamp"]):
                    failures.append(f"JSON timestamp is {encoded['timestamp']!r} ({type(encoded['timestamp']).__name__}), expected the integer {item['timestamp']}")
                if not same(encoded["signature"], signature):
                    failures.append("JSON signature differs from the signature property")
            return {"nonce": nonce}

        results = []
        for item in job["items"]:
            failures = []
            try:
                if item["kind"] == "jws":
                    info = check_jws(item, item["token"], failures)
                elif item["kind"] == "wrapper":
                    info = check_wrapper(item, failures)
                elif item["kind"] == "v1":
                    info = check_v1(item, failures)
                else:
                    raise ValueError("unknown kind " + item["kind"])
            except Exception as error:
                failures.append(f"verifier crashed: {type(error).__name__}: {error}")
                info = {}
            results.append({"label": item["label"], "failures": failures, "nonce": info.get("nonce")})
        with open(sys.argv[2], "w", encoding="utf-8") as handle:
            json.dump(results, handle)
        """#
}

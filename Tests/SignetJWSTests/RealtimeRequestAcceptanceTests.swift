import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import Testing

/// Acceptance tests for `AppStoreVerifier.verifyRealtimeRequest(_:)`, written from the
/// specification alone (docs/retention.md §1.2–1.6 and its "Signet" section, docs/verification.md,
/// docs/reason-codes.md, docs/json.md), not from the implementation.
///
/// The inputs are what the App Store and attackers post to a Get Retention Message endpoint:
/// the `signedPayload` of `{"signedPayload": …}`. Every payload here is hand-written JSON text
/// (not an encoder's output), so wire details — `appAppleId` as a JSON integer, `signedDate` in
/// milliseconds, an upper-case `requestIdentifier` — are exactly what the test says they are.
@Suite("Real-time retention request: acceptance")
struct RealtimeRequestAcceptanceTests {
    /// The verifier's clock: 2026-01-01T00:00:00Z (inside the test PKI's 2020–2045 validity).
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    /// When the App Store "signed" the genuine requests: one hour before `now`, with a
    /// millisecond part, so a seconds/milliseconds mix-up or a lost fraction shows.
    static let signedDate: Int64 = 1_767_222_000_123
    /// Our app.
    static let appAppleId: Int64 = 1_234_567_890
    /// Another app (one more than ours: the smallest difference).
    static let otherAppAppleId: Int64 = 1_234_567_891
    static let bundleId = "com.example.signet"
    /// As Apple may write it (upper case); the verified request carries it lower case.
    static let upperRequestIdentifier = "3DB5C98D-8ACF-4E29-831E-8E1F82F9F6E9"

    static let pki: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()
    /// Same subject names, other keys: a chain to a root the verifier does not trust.
    static let otherPKI: TestPKI = {
        do { return try TestPKI() } catch { fatalError("TestPKI: \(error)") }
    }()

    // MARK: - Building requests

    /// A `DecodedRealtimeRequestBody` as raw JSON members (name, JSON value text), in Apple's order.
    struct RequestJSON {
        var members: [(name: String, value: String)]

        static let fieldNames = [
            "originalTransactionId", "appAppleId", "productId", "userLocale", "requestIdentifier", "environment", "signedDate",
        ]

        init(
            environment: String = "Sandbox", appAppleId: Int64 = RealtimeRequestAcceptanceTests.appAppleId,
            originalTransactionId: String = "2000000123456789", productId: String = "com.example.premium.monthly",
            userLocale: String = "en-US", requestIdentifier: String = RealtimeRequestAcceptanceTests.upperRequestIdentifier,
            signedDate: Int64 = RealtimeRequestAcceptanceTests.signedDate
        ) {
            members = [
                ("originalTransactionId", "\"\(originalTransactionId)\""),
                ("appAppleId", String(appAppleId)),
                ("productId", "\"\(productId)\""),
                ("userLocale", "\"\(userLocale)\""),
                ("requestIdentifier", "\"\(requestIdentifier)\""),
                ("environment", "\"\(environment)\""),
                ("signedDate", String(signedDate)),
            ]
        }

        /// Replaces a member's raw value, or drops it (nil).
        func setting(_ name: String, raw: String?) -> RequestJSON {
            var copy = self
            if let raw {
                if let index = copy.members.firstIndex(where: { $0.name == name }) {
                    copy.members[index].value = raw
                } else {
                    copy.members.append((name, raw))
                }
            } else {
                copy.members.removeAll { $0.name == name }
            }
            return copy
        }

        /// Appends a member (even one already present: duplicate keys).
        func appending(_ name: String, raw: String) -> RequestJSON {
            var copy = self
            copy.members.append((name, raw))
            return copy
        }

        var text: String {
            "{" + members.map { "\"\($0.name)\":\($0.value)" }.joined(separator: ",") + "}"
        }
    }

    static func sign(_ json: String, _ configure: (inout JWSSigner) throws -> Void = { _ in }) throws -> String {
        var signer = JWSSigner(pki: pki)
        try configure(&signer)
        return try signer.sign(json: json)
    }

    static func sign(_ request: RequestJSON, _ configure: (inout JWSSigner) throws -> Void = { _ in }) throws -> String {
        try sign(request.text, configure)
    }

    static func verifier(
        _ environment: AppStoreEnvironment, appAppleId: Int64? = RealtimeRequestAcceptanceTests.appAppleId, bundleId: String? = nil,
        roots: [X509Certificate]? = nil, now: Date = RealtimeRequestAcceptanceTests.now
    ) throws -> AppStoreVerifier {
        try AppStoreVerifier(
            configuration: VerifierConfiguration(
                roots: roots ?? [pki.root], environment: environment, bundleId: bundleId, appAppleId: appAppleId, now: { now }))
    }

    /// The rejection `verifyRealtimeRequest` throws, or nil (and an issue) when it verifies.
    @discardableResult
    static func expectRefused(
        _ reasons: Set<ReasonCode>, _ verifier: AppStoreVerifier, _ jws: String, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> RecordRejection? {
        do {
            let verified = try verifier.verifyRealtimeRequest(jws)
            Issue.record(
                "\(what): expected \(reasons.map(\.rawValue).sorted()), but it verified (\(verified.originalTransactionId))",
                sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(
                reasons.contains(error.reason), "\(what): expected \(reasons.map(\.rawValue).sorted()), got \(error.reason): \(error.detail)",
                sourceLocation: sourceLocation)
            return error
        }
    }

    @discardableResult
    static func expectRefused(
        _ reason: ReasonCode, _ verifier: AppStoreVerifier, _ jws: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> RecordRejection? {
        expectRefused([reason], verifier, jws, what, sourceLocation: sourceLocation)
    }

    /// Verifies or records why not, and fails the test.
    static func expectVerified(
        _ verifier: AppStoreVerifier, _ jws: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> VerifiedRealtimeRequest {
        do {
            return try verifier.verifyRealtimeRequest(jws)
        } catch {
            Issue.record("\(what): expected to verify, refused \(error.reason): \(error.detail)", sourceLocation: sourceLocation)
            throw error
        }
    }

    static let environments: [AppStoreEnvironment] = [.sandbox, .production]

    // MARK: - Genuine requests

    struct Genuine: Sendable, CustomTestStringConvertible {
        var environment: AppStoreEnvironment
        var originalTransactionId: String
        var productId: String
        var userLocale: String
        var testDescription: String { environment.rawValue }
    }

    @Test(
        "a genuine request verifies and reads back exactly",
        arguments: [
            Genuine(environment: .sandbox, originalTransactionId: "2000000123456789", productId: "com.example.premium.monthly", userLocale: "en-US"),
            Genuine(environment: .production, originalTransactionId: "330001234567890", productId: "com.example.premium.yearly", userLocale: "pt-BR"),
        ])
    func genuineRequest(_ genuine: Genuine) throws {
        let request = RequestJSON(
            environment: genuine.environment.rawValue, originalTransactionId: genuine.originalTransactionId, productId: genuine.productId,
            userLocale: genuine.userLocale)
        // Exactly the wire form Apple documents: integer appAppleId, upper-case UUID, ms signedDate.
        #expect(request.text.contains("\"appAppleId\":1234567890,"))
        #expect(request.text.contains("\"signedDate\":1767222000123}"))
        let jws = try Self.sign(request)
        let verified = try Self.expectVerified(try Self.verifier(genuine.environment), jws, "genuine \(genuine.environment.rawValue)")

        #expect(verified.payload.originalTransactionId == genuine.originalTransactionId)
        #expect(verified.payload.appAppleId == Self.appAppleId)
        #expect(verified.payload.productId == genuine.productId)
        #expect(verified.payload.userLocale == genuine.userLocale)  // case-sensitive: not normalised
        #expect(verified.payload.requestIdentifier == Self.upperRequestIdentifier)  // the payload as Apple wrote it
        #expect(verified.payload.environment == genuine.environment)
        #expect(verified.payload.signedDate?.millisecondsSince1970 == Self.signedDate)

        #expect(verified.originalTransactionId == genuine.originalTransactionId)
        #expect(verified.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        // The chain is judged at signedDate (to the second at least), not at the clock.
        let signedAt = Date(timeIntervalSince1970: Double(Self.signedDate) / 1000)
        #expect(abs(verified.effectiveDate.timeIntervalSince(signedAt)) < 1, "effectiveDate \(verified.effectiveDate)")
        #expect(verified.certificateChain.map(\.derEncoded) == Self.pki.chain.map(\.derEncoded))
    }

    @Test("requestIdentifier is compared lower case: Apple's upper-case and lower-case spellings are the same request")
    func requestIdentifierCase() throws {
        let verifier = try Self.verifier(.sandbox)
        let upper = try Self.expectVerified(verifier, try Self.sign(RequestJSON()), "upper")
        let lower = try Self.expectVerified(
            verifier, try Self.sign(RequestJSON(requestIdentifier: Self.upperRequestIdentifier.lowercased())), "lower")
        let mixed = try Self.expectVerified(
            verifier, try Self.sign(RequestJSON(requestIdentifier: "3db5C98D-8acf-4E29-831e-8E1F82f9F6e9")), "mixed")
        #expect(upper.requestIdentifier == lower.requestIdentifier)
        #expect(mixed.requestIdentifier == lower.requestIdentifier)
        #expect(upper.requestIdentifier == upper.requestIdentifier.lowercased())
        #expect(lower.payload.requestIdentifier == Self.upperRequestIdentifier.lowercased())
    }

    @Test("a request has no bundleId: a verifier configured with one still accepts it", arguments: environments)
    func configuredBundleIdDoesNotApply(_ environment: AppStoreEnvironment) throws {
        let verifier = try Self.verifier(environment, bundleId: Self.bundleId)
        let verified = try Self.expectVerified(verifier, try Self.sign(RequestJSON(environment: environment.rawValue)), "with bundleId")
        #expect(verified.payload.appAppleId == Self.appAppleId)
    }

    @Test("appAppleId keeps full Int64 precision (no Double rounding)", arguments: environments)
    func appAppleIdPrecision(_ environment: AppStoreEnvironment) throws {
        let big: Int64 = 9_007_199_254_740_993  // 2^53 + 1: a Double reads it as 2^53
        let verifier = try Self.verifier(environment, appAppleId: big)
        let verified = try Self.expectVerified(
            verifier, try Self.sign(RequestJSON(environment: environment.rawValue, appAppleId: big)), "2^53+1")
        #expect(verified.payload.appAppleId == big)
        Self.expectRefused(
            "app_apple_id_mismatch", verifier, try Self.sign(RequestJSON(environment: environment.rawValue, appAppleId: big - 1)),
            "2^53 against 2^53+1")
        let maxVerifier = try Self.verifier(environment, appAppleId: .max)
        #expect(try Self.expectVerified(maxVerifier, try Self.sign(RequestJSON(environment: environment.rawValue, appAppleId: .max)), "Int64.max").payload.appAppleId == .max)
    }

    @Test("extra unknown fields are accepted (Apple may add fields)", arguments: environments)
    func unknownFields(_ environment: AppStoreEnvironment) throws {
        let request = RequestJSON(environment: environment.rawValue)
            .appending("storefront", raw: "\"USA\"")
            .appending("futureField", raw: #"{"nested":[1,2.5,-0,1e3,null,true,false,"x",{"deep":[]}]}"#)
            .appending("anotherFutureNumber", raw: "1.5e300")
        let verified = try Self.expectVerified(try Self.verifier(environment), try Self.sign(request), "unknown fields")
        #expect(verified.payload.originalTransactionId == "2000000123456789")
        #expect(verified.requestIdentifier == Self.upperRequestIdentifier.lowercased())
    }

    @Test("member order does not matter")
    func memberOrder() throws {
        var request = RequestJSON()
        request.members.reverse()
        let verified = try Self.expectVerified(try Self.verifier(.sandbox), try Self.sign(request), "reversed members")
        #expect(verified.payload.signedDate?.millisecondsSince1970 == Self.signedDate)
    }

    @Test("a verifier without a configured appAppleId does not compare it")
    func noConfiguredAppAppleId() throws {
        let verifier = try Self.verifier(.sandbox, appAppleId: nil)
        let verified = try Self.expectVerified(
            verifier, try Self.sign(RequestJSON(appAppleId: Self.otherAppAppleId)), "no configured app Apple id")
        #expect(verified.payload.appAppleId == Self.otherAppAppleId)
    }

    // MARK: - Claims

    @Test("another app's request is refused in every environment (Apple: never answer it)", arguments: environments)
    func otherApp(_ environment: AppStoreEnvironment) throws {
        let verifier = try Self.verifier(environment)
        // Apple's libraries check appAppleId only in Production; Apple's rule and Signet's doc: in both.
        for other in [Self.otherAppAppleId, Self.appAppleId - 1, 0, -Self.appAppleId, 531_412, Int64.max, Int64.min] {
            Self.expectRefused(
                "app_apple_id_mismatch", verifier, try Self.sign(RequestJSON(environment: environment.rawValue, appAppleId: other)),
                "\(environment.rawValue) appAppleId \(other)")
        }
    }

    @Test("a request for the other environment is refused", arguments: environments)
    func otherEnvironment(_ environment: AppStoreEnvironment) throws {
        let verifier = try Self.verifier(environment)
        let other = environment == .production ? "Sandbox" : "Production"
        Self.expectRefused("environment_mismatch", verifier, try Self.sign(RequestJSON(environment: other)), "\(other) request to \(environment.rawValue)")
        // The test-only environments and a case variant are not this environment either.
        for value in ["Xcode", "LocalTesting", environment.rawValue.lowercased(), environment.rawValue.uppercased(), ""] {
            Self.expectRefused(
                ["environment_mismatch", "malformed_payload"], verifier, try Self.sign(RequestJSON(environment: value)),
                "environment \"\(value)\" to \(environment.rawValue)")
        }
    }

    @Test("another app's request for the other environment: app_apple_id_mismatch (appAppleId is checked before environment)")
    func claimOrder() throws {
        Self.expectRefused(
            "app_apple_id_mismatch", try Self.verifier(.production),
            try Self.sign(RequestJSON(environment: "Sandbox", appAppleId: Self.otherAppAppleId)), "both wrong")
    }

    // MARK: - Payload shape

    struct FieldCase: Sendable, CustomTestStringConvertible {
        var field: String
        var environment: AppStoreEnvironment
        var testDescription: String { "\(field) (\(environment.rawValue))" }
    }

    static let everyFieldInEveryEnvironment: [FieldCase] = RequestJSON.fieldNames.flatMap { field in
        environments.map { FieldCase(field: field, environment: $0) }
    }

    @Test("a payload missing a required field is malformed_payload naming it", arguments: everyFieldInEveryEnvironment)
    func missingField(_ field: FieldCase) throws {
        let request = RequestJSON(environment: field.environment.rawValue).setting(field.field, raw: nil)
        #expect(!request.text.contains("\"\(field.field)\""))
        let rejection = Self.expectRefused(
            "malformed_payload", try Self.verifier(field.environment), try Self.sign(request), "without \(field.field)")
        if let rejection {
            #expect(rejection.detail.contains(field.field), "detail should name \(field.field): \(rejection.detail)")
        }
    }

    @Test("a required field that is null is malformed_payload", arguments: everyFieldInEveryEnvironment)
    func nullField(_ field: FieldCase) throws {
        let request = RequestJSON(environment: field.environment.rawValue).setting(field.field, raw: "null")
        let rejection = Self.expectRefused(
            "malformed_payload", try Self.verifier(field.environment), try Self.sign(request), "\(field.field): null")
        if let rejection {
            #expect(rejection.detail.contains(field.field), "detail should name \(field.field): \(rejection.detail)")
        }
    }

    @Test(
        "appAppleId not a JSON integer is malformed_payload",
        arguments: [
            #""1234567890""#, "1234567890.5", "1234567890.0", "1.23456789e9", "1.23456789E+9", "true", "[1234567890]",
            #"{"id":1234567890}"#, "99999999999999999999", "-99999999999999999999",
        ])
    func appAppleIdNotInteger(_ raw: String) throws {
        for environment in Self.environments {
            Self.expectRefused(
                "malformed_payload", try Self.verifier(environment),
                try Self.sign(RequestJSON(environment: environment.rawValue).setting("appAppleId", raw: raw)),
                "\(environment.rawValue) appAppleId \(raw)")
        }
    }

    struct WrongType: Sendable, CustomTestStringConvertible {
        var field: String
        var raw: String
        var testDescription: String { "\(field): \(raw)" }
    }

    @Test(
        "other fields of the wrong JSON type are malformed_payload",
        arguments: [
            WrongType(field: "originalTransactionId", raw: "2000000123456789"),
            WrongType(field: "productId", raw: "42"),
            WrongType(field: "userLocale", raw: #"["en-US"]"#),
            WrongType(field: "requestIdentifier", raw: "{}"),
            WrongType(field: "environment", raw: "1"),
            WrongType(field: "signedDate", raw: #""1767222000123""#),
            WrongType(field: "signedDate", raw: "99999999999999999999"),
        ])
    func wrongType(_ wrong: WrongType) throws {
        Self.expectRefused(
            "malformed_payload", try Self.verifier(.sandbox), try Self.sign(RequestJSON().setting(wrong.field, raw: wrong.raw)),
            wrong.testDescription)
    }

    /// Apple documents `signedDate` as an integer, but AppStoreModels' `AppleTimestamp` is documented
    /// to accept a fractional number (StoreKit Testing in Xcode writes one) and truncate it toward
    /// zero; the request's `signedDate` is that type, so the fraction is dropped, not refused.
    @Test("a fractional signedDate is truncated to the millisecond, as AppleTimestamp documents")
    func fractionalSignedDate() throws {
        let verified = try Self.expectVerified(
            try Self.verifier(.sandbox), try Self.sign(RequestJSON().setting("signedDate", raw: "1767222000123.9")), "fractional signedDate")
        #expect(verified.payload.signedDate?.millisecondsSince1970 == Self.signedDate)
    }

    @Test("a repeated known key is refused (no parser-differential: first or last?)")
    func duplicateKnownKey() throws {
        let verifier = try Self.verifier(.sandbox)
        // Another app's id first, ours last (Foundation would keep the last), and the reverse.
        let otherFirst = RequestJSON().setting("appAppleId", raw: String(Self.otherAppAppleId)).appending("appAppleId", raw: String(Self.appAppleId))
        let oursFirst = RequestJSON().appending("appAppleId", raw: String(Self.otherAppAppleId))
        let environmentTwice = RequestJSON().appending("environment", raw: "\"Production\"")
        for (name, request) in [("other app first", otherFirst), ("ours first", oursFirst), ("environment twice", environmentTwice)] {
            Self.expectRefused(["malformed_jws", "malformed_payload"], verifier, try Self.sign(request), name)
        }
    }

    @Test("a signed payload that is not a JSON object is refused")
    func payloadNotObject() throws {
        let verifier = try Self.verifier(.sandbox)
        for json in ["[]", "null", "\"request\"", "1234567890", "", "{", RequestJSON().text + ",", RequestJSON().text + "{}", "\u{FEFF}" + RequestJSON().text] {
            Self.expectRefused(["malformed_jws", "malformed_payload"], verifier, try Self.sign(json), "payload \(json.prefix(20))")
        }
    }

    // MARK: - Other kinds of signed data posted as a request

    static func notificationJSON(transaction: String) -> String {
        #"{"notificationType":"DID_RENEW","notificationUUID":"6b1d2c3e-0000-4000-8000-000000000001","version":"2.0","signedDate":\#(signedDate),"data":{"appAppleId":\#(appAppleId),"bundleId":"\#(bundleId)","bundleVersion":"1.0","environment":"Sandbox","signedTransactionInfo":"\#(transaction)","status":1}}"#
    }

    static let transactionJSON =
        #"{"transactionId":"2000000123456790","originalTransactionId":"2000000123456789","bundleId":"com.example.signet","productId":"com.example.premium.monthly","purchaseDate":1767000000000,"originalPurchaseDate":1760000000000,"expiresDate":1769600000000,"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\#(signedDate),"environment":"Sandbox","transactionReason":"RENEWAL","storefront":"USA","storefrontId":"143441","price":9990,"currency":"USD"}"#

    static let renewalJSON =
        #"{"originalTransactionId":"2000000123456789","autoRenewProductId":"com.example.premium.monthly","productId":"com.example.premium.monthly","autoRenewStatus":1,"signedDate":\#(signedDate),"environment":"Sandbox","recentSubscriptionStartDate":1760000000000,"renewalDate":1769600000000}"#

    @Test("a notification's signedPayload posted as a request is malformed_payload")
    func notificationPosted() throws {
        let notification = try Self.sign(Self.notificationJSON(transaction: try Self.sign(Self.transactionJSON)))
        for verifier in [try Self.verifier(.sandbox), try Self.verifier(.sandbox, bundleId: Self.bundleId)] {
            if let rejection = Self.expectRefused("malformed_payload", verifier, notification, "notification") {
                // It lacks (at least) these, wherever its data names the app.
                for field in ["originalTransactionId", "productId", "userLocale", "requestIdentifier"] {
                    #expect(rejection.detail.contains(field), "detail should name \(field): \(rejection.detail)")
                }
            }
        }
    }

    @Test("a transaction or renewal info posted as a request is malformed_payload")
    func transactionPosted() throws {
        for verifier in [try Self.verifier(.sandbox), try Self.verifier(.sandbox, bundleId: Self.bundleId)] {
            if let rejection = Self.expectRefused("malformed_payload", verifier, try Self.sign(Self.transactionJSON), "transaction") {
                for field in ["appAppleId", "userLocale", "requestIdentifier"] {
                    #expect(rejection.detail.contains(field), "detail should name \(field): \(rejection.detail)")
                }
            }
            if let rejection = Self.expectRefused("malformed_payload", verifier, try Self.sign(Self.renewalJSON), "renewal info") {
                for field in ["appAppleId", "userLocale", "requestIdentifier"] {
                    #expect(rejection.detail.contains(field), "detail should name \(field): \(rejection.detail)")
                }
            }
        }
    }

    // MARK: - Forgeries

    enum Forgery: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case wrongSigningKey, tamperedPayload, truncatedSignature, derSignature, injectedJWK
        case foreignChain, foreignLeafAndIntermediateWithOurRoot, foreignIntermediate, selfSignedLeafAlone
        case leafWithoutMarkerOID, intermediateWithoutMarkerOID
        case algNone, algNoneUnsigned, algHS256KeyConfusion, algMissing, algLowerCase, algES384, algRS256
        case critHeader, x5cMissing, x5cTwoCertificates, x5cFourCertificates, x5cGarbage

        var testDescription: String { rawValue }

        var expected: Set<ReasonCode> {
            switch self {
            case .wrongSigningKey, .tamperedPayload, .truncatedSignature, .derSignature, .injectedJWK: ["invalid_signature"]
            case .foreignChain, .foreignLeafAndIntermediateWithOurRoot, .foreignIntermediate: ["invalid_certificate_chain"]
            case .selfSignedLeafAlone: ["invalid_x5c"]
            case .leafWithoutMarkerOID, .intermediateWithoutMarkerOID: ["missing_apple_oid"]
            case .algNone, .algNoneUnsigned, .algHS256KeyConfusion, .algMissing, .algLowerCase, .algES384, .algRS256:
                ["unsupported_algorithm", "malformed_jws"]
            case .critHeader: ["unsupported_header"]
            case .x5cMissing, .x5cTwoCertificates, .x5cFourCertificates, .x5cGarbage: ["invalid_x5c"]
            }
        }

        func jws() throws -> String {
            typealias T = RealtimeRequestAcceptanceTests
            let pki = T.pki
            let request = RequestJSON()
            let payload = Array(request.text.utf8)
            func header(alg: String) -> [UInt8] {
                Array((#"{"alg":"\#(alg)","x5c":["# + pki.chain.map { "\"\(Base64.encode($0.derEncoded))\"" }.joined(separator: ",") + "]}").utf8)
            }
            switch self {
            case .wrongSigningKey:
                return try T.sign(request) { $0.key = try ECPrivateKey(generating: .p256) }
            case .tamperedPayload:
                // A genuine request for another app, its appAppleId edited to ours; signature kept.
                let genuine = try T.sign(RequestJSON(appAppleId: T.otherAppAppleId))
                let parts = genuine.split(separator: ".", omittingEmptySubsequences: false)
                return parts[0] + "." + Base64.encodeURL(payload) + "." + parts[2]
            case .truncatedSignature:
                return try T.sign(request) { $0.transformSignature = { Array($0.prefix(63)) } }
            case .derSignature:
                // The same signature, DER-encoded (JWS requires raw r||s).
                return try T.sign(request) { $0.transformSignature = { raw in Forgery.der(raw) } }
            case .injectedJWK:
                // The attacker's key offered in `jwk` (to be ignored), the genuine chain in x5c.
                let coordinate = Base64.encodeURL((0..<32).map { UInt8($0) })
                return try T.sign(request) {
                    $0.key = try ECPrivateKey(generating: .p256)
                    $0.extraHeaderMembers = [#""jwk":{"kty":"EC","crv":"P-256","x":"\#(coordinate)","y":"\#(coordinate)"}"#]
                }
            case .foreignChain:
                return try JWSSigner(pki: T.otherPKI).sign(payload: payload)
            case .foreignLeafAndIntermediateWithOurRoot:
                // x5c[2] is ours, but the intermediate was not signed by it.
                return try JWSSigner(key: T.otherPKI.leafKey, chain: [T.otherPKI.leaf, T.otherPKI.intermediate, pki.root]).sign(payload: payload)
            case .foreignIntermediate:
                // Our leaf, an intermediate from elsewhere (same names), our root.
                return try JWSSigner(key: pki.leafKey, chain: [pki.leaf, T.otherPKI.intermediate, pki.root]).sign(payload: payload)
            case .selfSignedLeafAlone:
                return try JWSSigner(key: pki.leafKey, chain: [pki.leaf]).sign(payload: payload)
            case .leafWithoutMarkerOID:
                let key = try ECPrivateKey(generating: .p256)
                let leaf = try pki.issueLeaf(key: key, includeMarkerOID: false, serialNumber: 0x5A01)
                return try JWSSigner(key: key, chain: [leaf, pki.intermediate, pki.root]).sign(payload: payload)
            case .intermediateWithoutMarkerOID:
                let intermediateKey = try ECPrivateKey(generating: .p384)
                let intermediate = try pki.issueIntermediate(key: intermediateKey, includeMarkerOID: false, serialNumber: 0x6A01)
                let leafKey = try ECPrivateKey(generating: .p256)
                let leaf = try TestPKI.makeLeaf(
                    key: leafKey, commonName: "Signet Fixtures Test Receipt Signing", issuer: intermediate, issuerKey: intermediateKey,
                    notBefore: pki.root.notBefore, notAfter: pki.root.notAfter, serialNumber: 0x6A02)
                return try JWSSigner(key: leafKey, chain: [leaf, intermediate, pki.root]).sign(payload: payload)
            case .algNone:
                return try T.sign(request) { $0.alg = "none" }
            case .algNoneUnsigned:
                return JWSSigner.compact(header: header(alg: "none"), payload: payload, signature: [])
            case .algHS256KeyConfusion:
                // HMAC keyed with public material (the leaf certificate): the classic confusion attack.
                let headerBytes = header(alg: "HS256")
                let input = Base64.encodeURL(headerBytes) + "." + Base64.encodeURL(payload)
                let mac = HMACSHA256.authenticationCode(for: Array(input.utf8), key: pki.leaf.derEncoded)
                return input + "." + Base64.encodeURL(mac)
            case .algMissing:
                return try T.sign(request) { $0.alg = nil }
            case .algLowerCase:
                return try T.sign(request) { $0.alg = "es256" }
            case .algES384:
                return try T.sign(request) { $0.alg = "ES384" }
            case .algRS256:
                return try T.sign(request) { $0.alg = "RS256" }
            case .critHeader:
                return try T.sign(request) { $0.extraHeaderMembers = [#""crit":["exp"]"#, #""exp":1"#] }
            case .x5cMissing:
                return try T.sign(request) { $0.omitX5C = true }
            case .x5cTwoCertificates:
                return try T.sign(request) { $0.chain = [pki.leaf, pki.intermediate] }
            case .x5cFourCertificates:
                return try T.sign(request) { $0.chain = [pki.leaf, pki.intermediate, pki.root, pki.root] }
            case .x5cGarbage:
                return try T.sign(request) { $0.x5cStrings = ["not base64!", "AAAA", "MIIB"] }
            }
        }

        /// A raw 64-byte r||s ECDSA signature as DER.
        static func der(_ raw: [UInt8]) -> [UInt8] {
            func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
                var value = Array(bytes.drop { $0 == 0 })
                if value.isEmpty { value = [0] }
                if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
                return [0x02, UInt8(value.count)] + value
            }
            let body = integer(raw[0..<32]) + integer(raw[32..<64])
            return [0x30, UInt8(body.count)] + body
        }
    }

    @Test("forged requests are refused with the precise reason", arguments: Forgery.allCases)
    func forged(_ forgery: Forgery) throws {
        let jws = try forgery.jws()
        for environment in Self.environments {
            // The payload says Sandbox: in Production the forgery must still be refused for its own reason first.
            Self.expectRefused(forgery.expected, try Self.verifier(environment), jws, "\(forgery.rawValue) (\(environment.rawValue))")
        }
    }

    @Test("the test PKI's genuine-looking request is refused by a verifier trusting only Apple's roots")
    func appleRootsOnly() throws {
        let verifier = try AppStoreVerifier(
            configuration: VerifierConfiguration(environment: .sandbox, bundleId: nil, appAppleId: Self.appAppleId, now: { Self.now }))
        Self.expectRefused("invalid_certificate_chain", verifier, try Self.sign(RequestJSON()), "test PKI under Apple's roots")
    }

    // MARK: - Dates

    @Test("signedDate far in the future is signed_date_in_future", arguments: environments)
    func futureSignedDate(_ environment: AppStoreEnvironment) throws {
        let verifier = try Self.verifier(environment)
        let nowMs = Int64(Self.now.timeIntervalSince1970 * 1000)
        for (name, date) in [
            ("2040", Int64(2_208_988_800_000)), ("now + 1 day", nowMs + 86_400_000), ("now + 6 min", nowMs + 360_000), ("Int64.max", Int64.max),
        ] {
            Self.expectRefused(
                "signed_date_in_future", verifier, try Self.sign(RequestJSON(environment: environment.rawValue, signedDate: date)), name)
        }
        // Within the documented 5-minute skew it is accepted.
        _ = try Self.expectVerified(
            verifier, try Self.sign(RequestJSON(environment: environment.rawValue, signedDate: nowMs + 240_000)), "now + 4 min")
    }

    @Test("signedDate is milliseconds: a value in seconds, or one outside the chain's validity, is refused")
    func signedDateOutsideValidity() throws {
        let verifier = try Self.verifier(.sandbox)
        for (name, date) in [
            ("seconds, not ms", Self.signedDate / 1000), ("2019, before the certificates", Int64(1_546_300_800_000)), ("-1", Int64(-1)),
            ("Int64.min", Int64.min),
        ] {
            Self.expectRefused("certificate_not_valid_at_signed_date", verifier, try Self.sign(RequestJSON(signedDate: date)), name)
        }
    }

    @Test("a leaf expired at signedDate is refused")
    func expiredLeaf() throws {
        let expired = try TestPKI(leafNotAfter: Date(timeIntervalSince1970: 1_750_000_000))  // 2025-06-15
        let verifier = try Self.verifier(.sandbox, roots: [expired.root])
        Self.expectRefused(
            "certificate_not_valid_at_signed_date", verifier, try JWSSigner(pki: expired).sign(json: RequestJSON().text), "expired leaf")
    }

    // MARK: - Garbage

    @Test("truncated and garbage JWS strings are refused")
    func garbage() throws {
        let verifier = try Self.verifier(.sandbox)
        let genuine = try Self.sign(RequestJSON())
        let parts = genuine.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let structural: Set<ReasonCode> = ["malformed_jws", "invalid_signature", "unsupported_algorithm", "invalid_x5c"]
        let cases: [(String, String)] = [
            ("empty", ""), ("space", " "), ("dot", "."), ("two dots", ".."), ("three dots", "..."), ("a.b.c", "a.b.c"),
            ("eyJ", "eyJ"), ("header only", parts[0]), ("header.payload", parts[0] + "." + parts[1]),
            ("header.payload.", parts[0] + "." + parts[1] + "."), ("four segments", genuine + ".AAAA"),
            ("half", String(genuine.prefix(genuine.count / 2))), ("minus last char", String(genuine.dropLast())),
            ("minus last 4 chars", String(genuine.dropLast(4))), ("trailing newline", genuine + "\n"), ("leading space", " " + genuine),
            ("quoted", "\"" + genuine + "\""), ("the whole body", #"{"signedPayload":""# + genuine + #""}"#),
            ("padded", genuine + "=="), ("standard base64", genuine.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "+/"),
            ("payload not base64", parts[0] + ".!!!!." + parts[2]), ("NUL", "\u{0}"), ("NUL inside", parts[0] + "\u{0}." + parts[1] + "." + parts[2]),
            ("emoji", "🔏.🔏.🔏"), ("header not JSON", Base64.encodeURL(Array("not json".utf8)) + "." + parts[1] + "." + parts[2]),
            ("swapped header and payload", parts[1] + "." + parts[0] + "." + parts[2]),
        ]
        for (name, jws) in cases {
            Self.expectRefused(structural, verifier, jws, name)
        }
    }

    @Test("a 2 MB string is refused without a crash")
    func twoMegabytes() throws {
        let verifier = try Self.verifier(.sandbox)
        let size = 2 * 1024 * 1024
        let third = String(repeating: "A", count: size / 3)
        for (name, jws) in [
            ("2 MB of A", String(repeating: "A", count: size)), ("2 MB in three segments", third + "." + third + "." + third),
            ("2 MB of dots", String(repeating: ".", count: size)),
        ] {
            Self.expectRefused(["malformed_jws", "invalid_signature", "unsupported_algorithm", "invalid_x5c"], verifier, jws, name)
        }
        // A genuinely signed request grown past 1 MiB with an unknown field: over the documented size limit.
        let padded = RequestJSON().appending("padding", raw: "\"" + String(repeating: "x", count: size) + "\"")
        Self.expectRefused("malformed_jws", verifier, try Self.sign(padded), "signed 2 MB request")
        // The same verifier still accepts a genuine request afterwards.
        _ = try Self.expectVerified(verifier, try Self.sign(RequestJSON()), "genuine after 2 MB")
    }

    // MARK: - Replay

    @Test("the same request verified twice verifies twice, with identical results", arguments: environments)
    func replay(_ environment: AppStoreEnvironment) throws {
        // The verifier is stateless: it proves the App Store signed the request, not that it is new.
        // Replay protection (e.g. remembering requestIdentifier for a while, or bounding the age of
        // signedDate) is the Get Retention Message endpoint's job, not verifyRealtimeRequest's.
        let jws = try Self.sign(RequestJSON(environment: environment.rawValue))
        let verifier = try Self.verifier(environment)
        let first = try Self.expectVerified(verifier, jws, "first")
        let second = try Self.expectVerified(verifier, jws, "second (cached)")
        let fresh = try Self.expectVerified(try Self.verifier(environment), jws, "fresh verifier")
        let uncached = try Self.expectVerified(
            try AppStoreVerifier(
                configuration: VerifierConfiguration(
                    roots: [Self.pki.root], environment: environment, bundleId: nil, appAppleId: Self.appAppleId, chainCacheCapacity: 0,
                    headerCacheCapacity: 0, now: { Self.now })), jws, "uncached verifier")
        for (name, other) in [("second", second), ("fresh", fresh), ("uncached", uncached)] {
            #expect(other.payload == first.payload, "\(name)")
            #expect(other.originalTransactionId == first.originalTransactionId, "\(name)")
            #expect(other.requestIdentifier == first.requestIdentifier, "\(name)")
            #expect(other.effectiveDate == first.effectiveDate, "\(name)")
            #expect(other.certificateChain.map(\.derEncoded) == first.certificateChain.map(\.derEncoded), "\(name)")
        }
        // A refusal is just as repeatable, and does not poison the next genuine verification.
        let forged = try Self.sign(RequestJSON(environment: environment.rawValue)) { $0.key = try ECPrivateKey(generating: .p256) }
        Self.expectRefused("invalid_signature", verifier, forged, "forged, first")
        Self.expectRefused("invalid_signature", verifier, forged, "forged, second")
        #expect(try Self.expectVerified(verifier, jws, "genuine after forged").payload == first.payload)
    }

    // MARK: - The fixture files

    struct FixtureCase: Sendable, CustomTestStringConvertible {
        var environment: AppStoreEnvironment
        var appAppleId: Int64?
        var testDescription: String { "\(environment.rawValue), appAppleId \(appAppleId.map { String($0) } ?? "default")" }
    }

    /// The `signedPayload` of a body line, or nil when the line is not a JSON object with one.
    static func signedPayload(_ line: Substring) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return object["signedPayload"] as? String
    }

    static func lines(_ url: URL) throws -> [Substring] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true)
    }

    @Test(
        "signet fixtures: every realtime-requests line verifies, every realtime-refused line is refused",
        arguments: [
            FixtureCase(environment: .sandbox, appAppleId: nil), FixtureCase(environment: .production, appAppleId: nil),
            FixtureCase(environment: .production, appAppleId: 987_654_321),
        ])
    func fixtureFiles(_ fixture: FixtureCase) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-realtime-acceptance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let set = FixtureSet(directory: directory, bundleId: Self.bundleId, environment: fixture.environment, appAppleId: fixture.appAppleId)
        let summary = try set.write(count: 40)
        let roots = try X509Certificate.loadAll(fromFile: directory.appendingPathComponent("root.pem").path)
        #expect(roots.count == 1)
        let appAppleId = fixture.appAppleId ?? RealtimeRequestFixtures.defaultAppAppleId
        #expect(RealtimeRequestFixtures.defaultAppAppleId == 1_234_567_890)

        // Default clock (the fixtures are signed in the past), with and without a bundle id configured.
        let verifiers = [
            try AppStoreVerifier(configuration: VerifierConfiguration(roots: roots, environment: fixture.environment, bundleId: nil, appAppleId: appAppleId)),
            try AppStoreVerifier(
                configuration: VerifierConfiguration(roots: roots, environment: fixture.environment, bundleId: Self.bundleId, appAppleId: appAppleId)),
        ]

        let requests = try Self.lines(directory.appendingPathComponent("realtime-requests.ndjson"))
        #expect(!requests.isEmpty)
        #expect(requests.count == summary.realtimeRequests)
        var transactionIds = Set<String>()
        var requestIds = Set<String>()
        for (index, line) in requests.enumerated() {
            guard let jws = Self.signedPayload(line) else {
                Issue.record("realtime-requests line \(index + 1) is not {\"signedPayload\": …}")
                continue
            }
            for verifier in verifiers {
                guard let verified = try? Self.expectVerified(verifier, jws, "realtime-requests line \(index + 1)") else { continue }
                #expect(verified.payload.appAppleId == appAppleId)
                #expect(verified.payload.environment == fixture.environment)
                #expect(verified.requestIdentifier == verified.requestIdentifier.lowercased())
                #expect(verified.requestIdentifier == verified.payload.requestIdentifier?.lowercased())
                #expect(UUID(uuidString: verified.requestIdentifier) != nil)
                #expect(verified.originalTransactionId == verified.payload.originalTransactionId)
                #expect(verified.payload.missingFields.isEmpty)
                transactionIds.insert(verified.originalTransactionId)
                requestIds.insert(verified.requestIdentifier)
            }
        }
        #expect(transactionIds.count == requests.count, "one request per subscription")
        #expect(requestIds.count == requests.count, "requestIdentifier unique per request")

        // Refused: another app's, the other environment's, a forged signature, a foreign chain,
        // a missing field, a notification, a body that is not JSON (docs/retention.md, "Signet").
        let refused = try Self.lines(directory.appendingPathComponent("realtime-refused.ndjson"))
        #expect(!refused.isEmpty)
        for verifier in verifiers {
            var reasons: [String] = []
            var notJSON = 0
            for (index, line) in refused.enumerated() {
                guard let jws = Self.signedPayload(line) else {
                    notJSON += 1
                    continue
                }
                do {
                    let verified = try verifier.verifyRealtimeRequest(jws)
                    Issue.record("realtime-refused line \(index + 1) verified: \(verified.originalTransactionId)")
                } catch {
                    reasons.append(error.reason.rawValue)
                }
            }
            #expect(notJSON + reasons.count == refused.count)
            #expect(notJSON == 1)
            #expect(
                reasons.sorted()
                    == [
                        "app_apple_id_mismatch", "environment_mismatch", "invalid_certificate_chain", "invalid_signature", "malformed_payload",
                        "malformed_payload",
                    ], "\(reasons)")
        }

        // Another app's verifier refuses every genuine line.
        let otherApp = try AppStoreVerifier(
            configuration: VerifierConfiguration(roots: roots, environment: fixture.environment, bundleId: nil, appAppleId: appAppleId + 1))
        for (index, line) in requests.enumerated() {
            guard let jws = Self.signedPayload(line) else { continue }
            Self.expectRefused("app_apple_id_mismatch", otherApp, jws, "realtime-requests line \(index + 1) for another app")
        }
        // The other environment's verifier refuses them too.
        let otherEnvironment = try AppStoreVerifier(
            configuration: VerifierConfiguration(
                roots: roots, environment: fixture.environment == .production ? .sandbox : .production, bundleId: nil, appAppleId: appAppleId))
        for (index, line) in requests.enumerated() {
            guard let jws = Self.signedPayload(line) else { continue }
            Self.expectRefused("environment_mismatch", otherEnvironment, jws, "realtime-requests line \(index + 1) in the other environment")
        }

        // The set's notifications and forwarded transactions, posted to the request endpoint, are refused.
        for name in ["notifications.ndjson", "transactions.ndjson"] {
            for (index, line) in try Self.lines(directory.appendingPathComponent(name)).enumerated() {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let jws = (object["signedPayload"] ?? object["signedTransaction"]) as? String
                else { continue }
                Self.expectRefused("malformed_payload", verifiers[1], jws, "\(name) line \(index + 1) as a request")
            }
        }
    }
}

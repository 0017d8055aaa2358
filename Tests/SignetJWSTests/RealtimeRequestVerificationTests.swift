import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import Testing

/// `AppStoreVerifier.verifyRealtimeRequest`: a Get Retention Message request is verified as a
/// notification (chain, Apple's marker OIDs, signature, environment) and, naming its app by
/// `appAppleId` alone, is refused for another app in every environment (docs/retention.md).
@Suite("real-time retention requests: verified as notifications, never for another app")
struct RealtimeRequestVerificationTests {
    static let pki = try! TestPKI()
    static let signedDate: Int64 = 1_767_225_600_000
    static let appAppleId: Int64 = 1_234_567_890

    static func verifier(environment: AppStoreEnvironment = .sandbox, appAppleId: Int64? = RealtimeRequestVerificationTests.appAppleId) throws -> AppStoreVerifier {
        try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [pki.root], environment: environment, bundleId: "com.example.signet", appAppleId: appAppleId,
            now: { Date(timeIntervalSince1970: Double(signedDate) / 1000 + 60) }))
    }

    static func request(
        appAppleId: Int64 = RealtimeRequestVerificationTests.appAppleId, environment: String = "Sandbox", dropping: String? = nil,
        requestIdentifier: String = "3DB5C98D-8ACF-4E29-831E-8E1F82F9F6E9"
    ) -> String {
        var fields = [
            ("originalTransactionId", #""2000000123456789""#), ("appAppleId", String(appAppleId)),
            ("productId", #""com.example.premium.monthly""#), ("userLocale", #""en-US""#),
            ("requestIdentifier", "\"\(requestIdentifier)\""), ("environment", "\"\(environment)\""),
            ("signedDate", String(signedDate)),
        ]
        fields.removeAll { $0.0 == dropping }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    static func signed(_ json: String, signer: JWSSigner = JWSSigner(pki: pki)) throws -> String {
        try signer.sign(json: json)
    }

    static func reason(_ body: () throws(RecordRejection) -> VerifiedRealtimeRequest) -> ReasonCode? {
        do {
            _ = try body()
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("a genuine request verifies with all seven fields; the request id compares in lower case")
    func genuine() throws {
        let verified = try Self.verifier().verifyRealtimeRequest(try Self.signed(Self.request()))
        #expect(verified.originalTransactionId == "2000000123456789")
        #expect(verified.payload.productId == "com.example.premium.monthly")
        #expect(verified.payload.userLocale == "en-US")
        #expect(verified.payload.appAppleId == Self.appAppleId)
        #expect(verified.payload.environment == .sandbox)
        #expect(verified.requestIdentifier == "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9")
        #expect(verified.effectiveDate == Date(timeIntervalSince1970: Double(Self.signedDate) / 1000))
        #expect(verified.certificateChain.count == 3)
    }

    @Test("another app's request is refused in Sandbox too, not only in Production (a notification's is compared in Production only)")
    func anotherApp() throws {
        let sandbox = try Self.verifier(), production = try Self.verifier(environment: .production)
        let foreign = try Self.signed(Self.request(appAppleId: 999))
        let foreignProduction = try Self.signed(Self.request(appAppleId: 999, environment: "Production"))
        #expect(Self.reason { () throws(RecordRejection) in try sandbox.verifyRealtimeRequest(foreign) } == .appAppleIdMismatch)
        #expect(Self.reason { () throws(RecordRejection) in try production.verifyRealtimeRequest(foreignProduction) } == .appAppleIdMismatch)
    }

    @Test("the other environment's request, a forged signature, a foreign chain and a missing field are refused with their reason")
    func refusals() throws {
        let verifier = try Self.verifier()
        let production = try Self.signed(Self.request(environment: "Production"))
        #expect(Self.reason { () throws(RecordRejection) in try verifier.verifyRealtimeRequest(production) } == .environmentMismatch)

        var forger = JWSSigner(pki: Self.pki)
        forger.key = try ECPrivateKey(generating: .p256)  // Apple's chain in the header, another key signing
        let forged = try Self.signed(Self.request(), signer: forger)
        #expect(Self.reason { () throws(RecordRejection) in try verifier.verifyRealtimeRequest(forged) } == .invalidSignature)

        let otherPKI = try TestPKI()
        let foreignChain = try Self.signed(Self.request(), signer: JWSSigner(pki: otherPKI))
        #expect(Self.reason { () throws(RecordRejection) in try verifier.verifyRealtimeRequest(foreignChain) } == .invalidCertificateChain)

        for field in ["originalTransactionId", "appAppleId", "productId", "userLocale", "requestIdentifier", "environment", "signedDate"] {
            let partial = try Self.signed(Self.request(dropping: field))
            do {
                _ = try verifier.verifyRealtimeRequest(partial)
                Issue.record("a request without \(field) verified")
            } catch {
                #expect(error.reason == .malformedPayload, "\(field): \(error)")
                #expect(error.detail.contains(field), "\(field): \(error.detail)")
            }
        }
    }

    @Test("a notification's or a transaction's JWS is not taken for a request: malformed_payload saying so")
    func otherKinds() throws {
        let transaction = #"{"transactionId":"2000000001","originalTransactionId":"2000000000","bundleId":"com.example.signet","productId":"pro.monthly","environment":"Sandbox","signedDate":\#(Self.signedDate)}"#
        let verifier = try Self.verifier(), signedTransaction = try Self.signed(transaction)
        do {
            _ = try verifier.verifyRealtimeRequest(signedTransaction)
            Issue.record("a transaction verified as a realtime request")
        } catch {
            #expect(error.reason == .malformedPayload)
            #expect(error.detail.contains("not a real-time retention request"), "\(error.detail)")
        }
    }

    @Test("signet fixtures' realtime requests verify (one per subscription of its notifications) and its refused ones fail with their reason")
    func fixtureSet() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-realtime-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let set = FixtureSet(directory: directory, bundleId: "com.example.signet", environment: .sandbox)
        let summary = try set.write(count: 60)
        #expect(summary.realtimeRequests > 0)
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [try X509Certificate(pemEncoded: String(contentsOfFile: summary.rootPath, encoding: .utf8))], environment: .sandbox,
            bundleId: "com.example.signet", appAppleId: RealtimeRequestFixtures.defaultAppAppleId))
        func lines(_ name: String) throws -> [String] {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8).split(separator: "\n").map(String.init)
        }
        func signedPayload(_ line: String) -> String? {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["signedPayload"] as? String
        }
        var subscribed = Set<String>()
        for line in try lines("notifications.ndjson") {
            let notification = try verifier.verifyNotification(try #require(signedPayload(line)))
            if let purchase = notification.transaction?.payload.originalTransactionId { subscribed.insert(purchase) }
        }
        let requests = try lines("realtime-requests.ndjson")
        #expect(requests.count == summary.realtimeRequests)
        var purchases = Set<String>()
        for line in requests {
            let verified = try verifier.verifyRealtimeRequest(try #require(signedPayload(line)))
            purchases.insert(verified.originalTransactionId)
            #expect(verified.payload.appAppleId == RealtimeRequestFixtures.defaultAppAppleId)
        }
        #expect(purchases.count == requests.count, "one request per subscription")
        #expect(purchases.isSubset(of: subscribed), "every request asks about a purchase of the notifications")

        let expected: [ReasonCode] = [
            .appAppleIdMismatch, .environmentMismatch, .invalidSignature, .invalidCertificateChain, .malformedPayload, .malformedPayload,
            .malformedJSON,
        ]
        let refused = try lines("realtime-refused.ndjson")
        #expect(refused.count == expected.count)
        for (line, reason) in zip(refused, expected) {
            guard let jws = signedPayload(line) else {
                #expect(reason == .malformedJSON, "\(line.prefix(80)) is not JSON")
                continue
            }
            do {
                _ = try verifier.verifyRealtimeRequest(jws)
                Issue.record("a refused request verified (expected \(reason))")
            } catch {
                #expect(error.reason == reason, "\(error)")
            }
        }
    }

    @Test("a set made to end now (signet fixtures --now) has requests a verifier on the real clock accepts: none dated in the future")
    func fixtureSetEndingNow() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-realtime-now-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = 700
        let set = FixtureSet(
            directory: directory, bundleId: "com.example.signet", environment: .sandbox,
            start: FixtureSet.start(endingBefore: Int64(Date().timeIntervalSince1970 * 1000), count: count))
        let summary = try set.write(count: count)
        // Enough subscriptions that requests spaced even a second apart would reach past the
        // verifier's five minutes of allowed skew.
        try #require(summary.realtimeRequests > 300, "\(summary.realtimeRequests) subscriptions")
        let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
            roots: [try X509Certificate(pemEncoded: String(contentsOfFile: summary.rootPath, encoding: .utf8))], environment: .sandbox,
            bundleId: "com.example.signet", appAppleId: RealtimeRequestFixtures.defaultAppAppleId))
        let lines = try String(contentsOf: directory.appendingPathComponent("realtime-requests.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let written = Int64(Date().timeIntervalSince1970 * 1000)
        for line in lines {
            let body = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
            let request = try verifier.verifyRealtimeRequest(try #require(body["signedPayload"]))
            #expect((request.payload.signedDate?.millisecondsSince1970 ?? .max) <= written, "a request dated after the set was written")
        }
    }
}


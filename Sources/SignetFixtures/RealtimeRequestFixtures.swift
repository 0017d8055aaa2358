public import AppStoreModels
public import Foundation
public import SignetCore
public import SignetOpenSSL

/// Signed real-time retention requests, as the App Store POSTs them to a Get Retention Message
/// endpoint (`{"signedPayload": …}`, docs/retention.md), for the subscriptions of a fixture set,
/// and the ones such an endpoint must refuse.
public struct RealtimeRequestFixtures: Sendable {
    /// The app Apple id fixtures carry when the set names none (a request always carries one).
    public static let defaultAppAppleId: Int64 = 1_234_567_890

    /// One subscription a request asks about.
    public struct Subscription: Sendable, Hashable {
        /// Its original transaction id.
        public var originalTransactionId: String
        /// The product the customer is viewing.
        public var productId: String

        /// A subscription by its ids.
        public init(originalTransactionId: String, productId: String) {
            self.originalTransactionId = originalTransactionId
            self.productId = productId
        }
    }

    let pki: TestPKI
    let environment: AppStoreEnvironment
    let appAppleId: Int64

    /// Requests signed by `pki` for `environment` and `appAppleId`.
    public init(pki: TestPKI, environment: AppStoreEnvironment, appAppleId: Int64?) {
        self.pki = pki
        self.environment = environment
        self.appAppleId = appAppleId ?? Self.defaultAppAppleId
    }

    /// The payload of one request (`requestIdentifier` upper case, as real clients may write
    /// UUIDs), signed at `signedDate`.
    public static func payload(
        _ subscription: Subscription, appAppleId: Int64, environment: String, requestIdentifier: UUID, signedDate: Int64,
        locale: String = "en-US", dropping: String? = nil
    ) -> [UInt8] {
        var json = JSONText(reserving: 320)
        json.beginObject()
        let fields: [(String, (inout JSONText) -> Void)] = [
            ("originalTransactionId", { $0.string(subscription.originalTransactionId) }),
            ("appAppleId", { $0.int(appAppleId) }),
            ("productId", { $0.string(subscription.productId) }),
            ("userLocale", { $0.string(locale) }),
            ("requestIdentifier", { $0.string(requestIdentifier.uuidString) }),
            ("environment", { $0.string(environment) }),
            ("signedDate", { $0.int(signedDate) }),
        ]
        for (name, write) in fields where name != dropping {
            json.key(name)
            write(&json)
        }
        json.endObject()
        return json.bytes
    }

    /// A genuine request body for `subscription`.
    public func body(for subscription: Subscription, requestIdentifier: UUID, signedDate: Int64) throws(OpenSSLError) -> [UInt8] {
        let payload = Self.payload(
            subscription, appAppleId: appAppleId, environment: environment.rawValue, requestIdentifier: requestIdentifier,
            signedDate: signedDate)
        return FixtureSet.envelope("signedPayload", try pki.signer.sign(payload: payload))
    }

    /// Bodies an endpoint must refuse, each with the reason code it is refused with (SignetJWS's
    /// codes, written out: this module does not depend on the verifier): another
    /// app's, the other environment's, a forged signature, a foreign chain, a missing field, a
    /// notification posted to the wrong endpoint, a body that is not JSON.
    public func refused(for subscription: Subscription, signedDate: Int64, notification: [UInt8]) throws -> [(body: [UInt8], reason: ReasonCode)] {
        func signed(_ payload: [UInt8], by signer: JWSSigner? = nil) throws -> [UInt8] {
            FixtureSet.envelope("signedPayload", try (signer ?? pki.signer).sign(payload: payload))
        }
        func payload(appAppleId: Int64? = nil, environment: String? = nil, dropping: String? = nil) -> [UInt8] {
            Self.payload(
                subscription, appAppleId: appAppleId ?? self.appAppleId, environment: environment ?? self.environment.rawValue,
                requestIdentifier: UUID(), signedDate: signedDate, dropping: dropping)
        }
        var forger = pki.signer
        forger.key = try ECPrivateKey(generating: .p256)
        let otherEnvironment = environment == .production ? "Sandbox" : "Production"
        return [
            (try signed(payload(appAppleId: appAppleId + 1)), "app_apple_id_mismatch"),
            (try signed(payload(environment: otherEnvironment)), "environment_mismatch"),
            (try signed(payload(), by: forger), "invalid_signature"),
            (try signed(payload(), by: try TestPKI().signer), "invalid_certificate_chain"),
            (try signed(payload(dropping: "userLocale")), "malformed_payload"),
            (notification, "malformed_payload"),
            (Array("{\"signedPayload\": \"not a JWS\"".utf8), "malformed_json"),
        ]
    }
}

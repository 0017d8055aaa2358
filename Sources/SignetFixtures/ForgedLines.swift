import AppStoreModels
import Foundation
import SignetOpenSSL

/// Input lines Signet must reject, one per kind of attack or breakage, for demos and
/// smoke tests. Each is built from a genuine sample so only the named defect differs.
struct ForgedLines {
    let pki: TestPKI
    let bundleId: String
    let environment: AppStoreEnvironment
    let appAppleId: Int64?
    let seed: UInt64

    func all() throws -> [[UInt8]] {
        var generator = SampleNotificationGenerator(
            seed: seed &+ 1, bundleId: bundleId, environment: environment, appAppleId: appAppleId)
        let sample = generator.next()
        let signer = pki.signer
        func signed(_ signer: JWSSigner, bundle: String? = nil) throws -> String {
            let transaction = try sample.transactionPayload.map { try signer.sign(payload: $0) }
            let renewal = try sample.renewalPayload.map { try signer.sign(payload: $0) }
            var payload = sample.notificationJSON(signedTransactionInfo: transaction, signedRenewalInfo: renewal)
            if let bundle {
                payload = Array(String(decoding: payload, as: UTF8.self)
                    .replacingOccurrences(of: "\"\(bundleId)\"", with: "\"\(bundle)\"").utf8)
            }
            return try signer.sign(payload: payload)
        }
        let genuine = try signed(signer)

        // A payload byte changed after signing.
        var parts = genuine.split(separator: ".").map(String.init)
        var payloadBytes = Array(parts[1].utf8)
        payloadBytes[payloadBytes.count / 2] = payloadBytes[payloadBytes.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        parts[1] = String(decoding: payloadBytes, as: UTF8.self)
        let tampered = parts.joined(separator: ".")

        // Signed by a look-alike PKI that nobody trusts.
        let rogue = try signed(TestPKI(name: "Rogue").signer)

        // Correctly signed, but for another app.
        let otherApp = try signed(signer, bundle: "com.attacker.app")

        // alg "none" with the signature stripped.
        var none = signer
        none.alg = "none"
        none.transformSignature = { _ in [] }
        let unsigned = try signed(none)

        return [
            FixtureSet.envelope("signedPayload", tampered),
            FixtureSet.envelope("signedPayload", rogue),
            FixtureSet.envelope("signedPayload", otherApp),
            FixtureSet.envelope("signedPayload", unsigned),
            Array(#"{"signedPayload": "not.a.jws"}"#.utf8),
            Array(#"{"payload": "missing the signedPayload field"}"#.utf8),
            Array(#"{"signedPayload": "#.utf8),
        ]
    }
}

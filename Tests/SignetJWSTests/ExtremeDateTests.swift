import AppStoreModels
import Foundation
import SignetCore
import SignetFixtures
import SignetJWS
import SignetOpenSSL
import Testing

/// Issue 12's poison line: a JWS signed by anyone, whose `signedDate` is at the edge of
/// Int64, must be rejected with a reason code, never trap (a trap kills the pipeline).
@Suite("Extreme signedDate values")
struct ExtremeDateTests {
    static let extremes: [String] = [
        "-9223372036854775808", "-9223372036854774810", "-9223372036854775807",
        "9223372036854775807", "9223372036854775806", "-1", "-999", "-1000", "-1001", "0",
    ]

    @Test("trusted and untrusted signers, every payload kind", arguments: [false, true])
    func neverTraps(trusted: Bool) throws {
        let verifier = try AdversarialTests.verifier(.uncached)
        let signer = JWSSigner(pki: trusted ? AdversarialTests.pki : AdversarialTests.otherPKI)
        for value in Self.extremes {
            let notification = try signer.sign(json: """
                {"notificationType":"TEST","notificationUUID":"u","signedDate":\(value),"data":{"bundleId":"com.example.signet","environment":"Sandbox","appAppleId":4242}}
                """)
            let transaction = try signer.sign(json: """
                {"transactionId":"1","originalTransactionId":"1","bundleId":"com.example.signet","environment":"Sandbox","signedDate":\(value)}
                """)
            let accepted = [
                (try? verifier.verifyNotification(notification)) != nil,
                (try? verifier.verifyTransaction(transaction)) != nil,
                (try? verifier.verifyRenewalInfo(transaction)) != nil,
            ]
            // Reaching this line is the point (a trap ends the test process); an untrusted
            // signer must also never be accepted.
            #expect(trusted || !accepted.contains(true), "untrusted signer accepted with signedDate \(value)")
        }
    }
}

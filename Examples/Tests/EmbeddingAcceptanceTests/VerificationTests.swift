// (1) Verifying one notification with one import: this file imports SignetJWS only (besides
// Foundation and Testing), so AppStoreEnvironment, NotificationType (AppStoreModels),
// RecordRejection (SignetCore) and X509Certificate must all come with it.
import Foundation
import SignetJWS
import Testing

@Suite("Verify one notification (import SignetJWS)")
struct VerificationTests {
    let fixtures = Fixtures.shared

    func verifier(rootPath: String?, bundleId: String = "com.example.signet", environment: AppStoreEnvironment = .sandbox) throws -> AppStoreVerifier {
        let roots: [X509Certificate] = try rootPath.map { try AppleRoots.load([$0]) } ?? AppleRoots.all
        return try AppStoreVerifier(configuration: VerifierConfiguration(roots: roots, environment: environment, bundleId: bundleId))
    }

    /// The reason `verifyNotification` refuses `line` with; nil when it verifies.
    func rejection(_ verifier: AppStoreVerifier, _ line: String) throws -> RecordRejection? {
        let payload = try #require(Fixtures.signedPayload(of: line))
        do {
            _ = try verifier.verifyNotification(payload)
            return nil
        } catch {
            return error  // typed throws: a RecordRejection
        }
    }

    @Test("every genuine notification verifies, with what it says")
    func genuineNotificationsVerify() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try verifier(rootPath: fixtures.writeRoot(in: directory))
            var uuids: Set<String> = []
            var purchases = 0
            for line in fixtures.notifications {
                let notification = try verifier.verifyNotification(try #require(Fixtures.signedPayload(of: line)))
                #expect(notification.notificationType != nil)
                if let data = notification.payload.data {  // app-level notifications carry appData instead
                    #expect(data.bundleId == "com.example.signet")
                    #expect(data.environment == .sandbox)
                }
                uuids.insert(try #require(notification.notificationUUID))
                if let transaction = notification.transaction?.payload {
                    purchases += 1
                    #expect(transaction.originalTransactionId?.allSatisfy(\.isNumber) == true)
                    #expect(transaction.bundleId == "com.example.signet")
                }
            }
            #expect(uuids.count == fixtures.notifications.count, "every notification has its own notificationUUID")
            #expect(purchases > fixtures.notifications.count / 2, "most notifications carry a verified nested transaction")
            let first = try verifier.verifyNotification(try #require(Fixtures.signedPayload(of: fixtures.notifications[0])))
            #expect(first.notificationType == .subscribed, "the fixtures start with a first purchase")
            #expect(first.signingCertificate.subject.contains("Signet Fixtures"))
        }
    }

    @Test("forged lines are refused with the documented reason of each attack")
    func forgedLinesAreRefused() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try verifier(rootPath: fixtures.writeRoot(in: directory))
            var reasons: [String] = []
            for line in fixtures.forged {
                // Lines that are not even a webhook body are the decode stage's (see StatePipelineTests).
                guard Fixtures.signedPayload(of: line) != nil else { continue }
                let refused = try #require(try rejection(verifier, line), "a forged line verified: \(line.prefix(120))")
                #expect(DocumentedReasons.verify.contains(refused.reason.rawValue), "undocumented reason \(refused.reason)")
                #expect(!refused.detail.isEmpty)
                reasons.append(refused.reason.rawValue)
            }
            // `signet fixtures --help`: tampered, rogue root, other app, alg none, ...
            for expected in ["invalid_signature", "invalid_certificate_chain", "bundle_id_mismatch", "unsupported_algorithm"] {
                #expect(reasons.contains(expected), "no forged line was refused with \(expected); got \(reasons)")
            }
        }
    }

    @Test("another app's or another environment's notification is refused")
    func wrongBundleAndEnvironmentAreRefused() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try verifier(rootPath: fixtures.writeRoot(in: directory))
            #expect(!fixtures.wrongBundle.isEmpty && !fixtures.wrongEnvironment.isEmpty)
            for line in fixtures.wrongBundle {
                #expect(try rejection(verifier, line)?.reason.rawValue == "bundle_id_mismatch")
            }
            for line in fixtures.wrongEnvironment {
                #expect(try rejection(verifier, line)?.reason.rawValue == "environment_mismatch")
            }
            // The same lines verify for a verifier configured for them: only the setting differs.
            let otherApp = try self.verifier(rootPath: fixtures.writeRoot(in: directory), bundleId: "com.other.app")
            #expect(try rejection(otherApp, fixtures.wrongBundle[0]) == nil)
        }
    }

    @Test("a test root is trusted only when configured: Apple's root refuses the fixtures' chain")
    func appleRootRefusesTheTestChain() async throws {
        let apple = try verifier(rootPath: nil)
        #expect(try rejection(apple, fixtures.notifications[0])?.reason.rawValue == "invalid_certificate_chain")
        #expect(try AppleRoots.load(["apple"]).count == 1)
        #expect(AppleRoots.all.allSatisfy(AppleRoots.isAppleRootCAG3))
    }
}

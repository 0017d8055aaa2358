// Verifies one App Store Server Notification V2 and prints what it says.
//
//   VerifyNotification --bundle-id com.example.app [--environment Sandbox] [--root test-root.pem] < body.json
//
// The input is the body Apple POSTs to your webhook: {"signedPayload": "<JWS>"}. Without
// --root, only Apple Root CA - G3 is trusted (production); --root trusts a test root instead,
// such as the one `signet fixtures` writes. Exit status: 0 verified, 1 rejected, 2 bad usage.
import Foundation
import SignetJWS  // brings AppStoreModels (the payload types) and SignetCore (RecordRejection) with it

/// The value after `flag` on the command line, if given.
func option(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

guard let bundleId = option("--bundle-id") else {
    FileHandle.standardError.write(Data("usage: VerifyNotification --bundle-id ID [--environment Sandbox|Production] [--root PEM] < body.json\n".utf8))
    exit(2)
}

// One verifier serves every notification: it is thread-safe and caches the chains it verified.
let verifier: AppStoreVerifier
do {
    verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
        // "apple" is the built-in Apple Root CA - G3; a path is a PEM or DER file of roots.
        roots: try AppleRoots.load([option("--root") ?? "apple"]),
        environment: AppStoreEnvironment(rawValue: option("--environment") ?? "Production"),
        bundleId: bundleId))
} catch {
    FileHandle.standardError.write(Data("cannot build the verifier: \(error)\n".utf8))
    exit(2)
}

struct WebhookBody: Decodable { var signedPayload: String }

let input = FileHandle.standardInput.readDataToEndOfFile()
guard let body = try? JSONDecoder().decode(WebhookBody.self, from: input) else {
    print("rejected: the input is not {\"signedPayload\": \"...\"}")
    exit(1)
}

do {
    let notification = try verifier.verifyNotification(body.signedPayload)
    // The nested transaction and renewal info were verified too (their own signatures and chains).
    let transaction = notification.transaction?.payload
    let subtype = notification.subtype.map { "/\($0.rawValue)" } ?? ""
    print("verified \(notification.notificationType?.rawValue ?? "unknown type")\(subtype)")
    print("  notificationUUID     \(notification.notificationUUID ?? "-")")
    print("  originalTransaction  \(transaction?.originalTransactionId ?? "-")")
    print("  product              \(transaction?.productId ?? "-")")
    print("  signed by            \(notification.signingCertificate.subject)")
} catch {
    // A RecordRejection: a reason code (docs/reason-codes.md) and a detail for people.
    print("rejected: \(error.reason): \(error.detail)")
    exit(1)
}

public import AppStoreModels
import Foundation
public import SignetFixtures

/// Signed sample notifications for the fake App Store Server API, made with a test PKI by
/// the same code as `signet fixtures` (``FixtureSet/streamNotifications(count:pki:_:)``).
public struct FakeAppStoreAPISample: Sendable {
    /// The notification as Apple signs it (`signedPayload`).
    public var signedPayload: String
    /// Its nested `signedTransactionInfo`, when it has a transaction.
    public var signedTransaction: String?
    /// What it says, unsigned.
    public var sample: SampleNotification

    /// `count` signed notifications (every documented type in turn; seeded, so reproducible).
    public static func make(
        count: Int, pki: TestPKI, bundleId: String = "com.example.signet", environment: AppStoreEnvironment = .sandbox,
        seed: UInt64 = 1
    ) throws -> [FakeAppStoreAPISample] {
        // streamNotifications writes nothing; the directory is never touched.
        let set = FixtureSet(
            directory: FileManager.default.temporaryDirectory, bundleId: bundleId, environment: environment, seed: seed)
        var samples: [FakeAppStoreAPISample] = []
        try set.streamNotifications(count: count, pki: pki) { line, sample, signedTransaction in
            let envelope = try JSONSerialization.jsonObject(with: Data(line)) as? [String: String]
            guard let signedPayload = envelope?["signedPayload"] else { throw FakeAppStoreAPIError("no signedPayload in \(line)") }
            samples.append(FakeAppStoreAPISample(signedPayload: signedPayload, signedTransaction: signedTransaction, sample: sample))
        }
        return samples
    }

    /// This sample as history content, sent at `sentDate` (UNIX ms), failed or not.
    public func stored(sentDate: Int64, failed: Bool = false) -> FakeAppStoreAPI.StoredNotification {
        FakeAppStoreAPI.StoredNotification(
            signedPayload: signedPayload, sentDate: sentDate, failed: failed,
            notificationType: sample.combination.notificationType.rawValue, subtype: sample.combination.subtype?.rawValue,
            transactionIds: Set([sample.transactionId, sample.originalTransactionId].compactMap { $0 }))
    }
}

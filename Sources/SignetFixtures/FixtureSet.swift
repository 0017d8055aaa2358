public import AppStoreModels
public import Foundation
import SignetOpenSSL

/// Writes a ready-to-use fixture folder: a private Apple-shaped PKI and notifications of
/// every documented type and subtype, signed like Apple signs them (what `signet fixtures` does).
///
/// Folder contents:
/// - `root.pem` — the root to trust (`SIGNET_ROOT_CERTS`, `signet verify --root`);
/// - `notifications.ndjson` — one `{"signedPayload": ...}` per line, each with a nested signed
///   transaction and (for subscriptions) a signed renewal info;
/// - `transactions.ndjson` — `{"signedTransaction": ...}` lines, as an app forwards them after a purchase;
/// - `forged.ndjson` — lines that must be rejected, one per kind of attack, to see the dead-letter sink work;
/// - `realtime-requests.ndjson` — a real-time retention request body per subscription, signed after
///   its notifications (the set's app Apple id, else ``RealtimeRequestFixtures/defaultAppAppleId``);
/// - `realtime-refused.ndjson` — request bodies a Get Retention Message endpoint must refuse (another
///   app's, the other environment's, forged, a foreign chain, a missing field, a notification, not JSON);
/// - `fixtures.env` — `export` lines for the default pipeline's variables;
/// - `pki/` — the keys and certificates, so a later call can sign more with the same root.
public struct FixtureSet {
    public var directory: URL
    public var bundleId: String
    public var environment: AppStoreEnvironment
    public var appAppleId: Int64?
    public var seed: UInt64
    /// Where the samples' clock starts (UNIX ms); nil: early 2025 (reproducible, long expired).
    public var start: Int64?
    /// The type/subtype combinations of the notifications (empty: every documented one).
    public var only: [NotificationCombination] = []
    /// OCSP responders the certificates name in their authorityInfoAccess (nil: none): the
    /// leaf's answers for the intermediate, the intermediate's for the root. For trying
    /// `verify`'s `revocation:` policy against a local `openssl ocsp`.
    public var leafOCSPURL: String?
    public var intermediateOCSPURL: String?
    /// CRL distribution points the certificates name (nil: none): the leaf's list is the
    /// intermediate's, the intermediate's the root's. For `verify`'s CRL fallback.
    public var leafCRLURL: String?
    public var intermediateCRLURL: String?

    public init(
        directory: URL, bundleId: String = "com.example.signet", environment: AppStoreEnvironment = .sandbox,
        appAppleId: Int64? = nil, seed: UInt64 = 1, start: Int64? = nil
    ) {
        self.directory = directory
        self.bundleId = bundleId
        self.environment = environment
        self.appAppleId = appAppleId
        self.seed = seed
        self.start = start
    }

    /// A clock start for `count` samples that ends just before `now`: the samples advance 1 to
    /// 10 s each, and a signedDate in the future would not verify.
    public static func start(endingBefore now: Int64, count: Int) -> Int64 {
        now - Int64(count) * 10_000 - 60_000
    }

    /// What was written.
    public struct Summary: Sendable {
        public var notifications: Int
        public var transactions: Int
        public var forged: Int
        /// Real-time retention requests written (one per subscription).
        public var realtimeRequests: Int
        public var rootPath: String
    }

    /// Loads the PKI kept in `pki/`, or creates and keeps a new one.
    ///
    /// The keys are what is kept; the certificates are issued again from them on every call
    /// (with this call's OCSP and CRL URLs) and written beside them, so the `.pem` files always
    /// hold the chain the notifications of the last call carry (an `openssl ocsp` or a CRL
    /// built from them answers for it). The leaf's serial comes from its key, so it is the
    /// same on every call and differs between PKIs.
    public func loadOrCreatePKI() throws -> TestPKI {
        let pki = directory.appendingPathComponent("pki")
        let names = ["root", "intermediate", "leaf"]
        let keyFiles = names.map { pki.appendingPathComponent("\($0).key.pem") }
        let made: TestPKI
        if keyFiles.allSatisfy({ FileManager.default.fileExists(atPath: $0.path) }) {
            let keys = try keyFiles.map { try ECPrivateKey(pemEncoded: String(contentsOf: $0, encoding: .utf8)) }
            made = try TestPKI(
                rootKey: keys[0], intermediateKey: keys[1], leafKey: keys[2], intermediateOCSPURL: intermediateOCSPURL,
                leafOCSPURL: leafOCSPURL, intermediateCRLURL: intermediateCRLURL, leafCRLURL: leafCRLURL)
        } else {
            made = try TestPKI(
                intermediateOCSPURL: intermediateOCSPURL, leafOCSPURL: leafOCSPURL, intermediateCRLURL: intermediateCRLURL,
                leafCRLURL: leafCRLURL)
            try FileManager.default.createDirectory(at: pki, withIntermediateDirectories: true)
            for (name, key) in [("root", made.rootKey), ("intermediate", made.intermediateKey), ("leaf", made.leafKey)] {
                try key.pemEncoded.write(to: pki.appendingPathComponent("\(name).key.pem"), atomically: true, encoding: .utf8)
            }
        }
        for (name, certificate) in [("root", made.root), ("intermediate", made.intermediate), ("leaf", made.leaf)] {
            try certificate.pemEncoded.write(to: pki.appendingPathComponent("\(name).pem"), atomically: true, encoding: .utf8)
        }
        return made
    }

    /// Writes the whole folder with `count` notifications.
    @discardableResult
    public func write(count: Int) throws -> Summary {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pki = try loadOrCreatePKI()
        let rootPath = directory.appendingPathComponent("root.pem")
        try pki.rootPEM.write(to: rootPath, atomically: true, encoding: .utf8)

        let notifications = try LineFile(directory.appendingPathComponent("notifications.ndjson"))
        let transactions = try LineFile(directory.appendingPathComponent("transactions.ndjson"))
        var transactionCount = 0
        var subscriptions: [RealtimeRequestFixtures.Subscription] = []
        var seen = Set<String>()
        var lastNotification: [UInt8]?
        var lastSignedDate: Int64 = 0
        try streamNotifications(count: count, pki: pki) { line, sample, signedTransaction in
            try notifications.append(line)
            lastNotification = line
            lastSignedDate = max(lastSignedDate, sample.signedDate.millisecondsSince1970)
            // Auto-renewable purchases (they expire) are what a retention request asks about.
            if sample.expiresDate != nil, let purchase = sample.originalTransactionId, let product = sample.productId,
                seen.insert(purchase).inserted
            {
                subscriptions.append(.init(originalTransactionId: purchase, productId: product))
            }
            // Every tenth purchase is also forwarded by the app, before Apple's notification.
            if let signedTransaction, sample.combination.notificationType == .subscribed || sample.combination.notificationType == .oneTimeCharge,
                transactionCount * 10 < count
            {
                try transactions.append(Self.envelope("signedTransaction", signedTransaction))
                transactionCount += 1
            }
        }
        try notifications.close()
        try transactions.close()

        let forgedLines = try ForgedLines(pki: pki, bundleId: bundleId, environment: environment, appAppleId: appAppleId, seed: seed).all()
        let forged = try LineFile(directory.appendingPathComponent("forged.ndjson"))
        for line in forgedLines { try forged.append(line) }
        try forged.close()

        // A real-time retention request for every subscription, signed after its notifications,
        // and the requests a Get Retention Message endpoint must refuse (docs/retention.md).
        let realtime = RealtimeRequestFixtures(pki: pki, environment: environment, appAppleId: appAppleId)
        let requests = try LineFile(directory.appendingPathComponent("realtime-requests.ndjson"))
        // One millisecond after the last notification: a `--now` set ends just before now, and a
        // request dated later (one second apart each, say) would be in the future for a large set.
        for subscription in subscriptions {
            try requests.append(try realtime.body(for: subscription, requestIdentifier: UUID(), signedDate: lastSignedDate + 1))
        }
        try requests.close()
        let refused = try LineFile(directory.appendingPathComponent("realtime-refused.ndjson"))
        if let subscription = subscriptions.first, let lastNotification {
            for (body, _) in try realtime.refused(for: subscription, signedDate: lastSignedDate + 1, notification: lastNotification) {
                try refused.append(body)
            }
        }
        try refused.close()

        var env = "# Settings for the default pipeline (source this file).\n"
        env += "export SIGNET_ROOT_CERTS=\(rootPath.standardizedFileURL.path)\n"
        env += "export SIGNET_ENVIRONMENT=\(environment.rawValue)\n"
        env += "export SIGNET_BUNDLE_ID=\(bundleId)\n"
        if let appAppleId { env += "export SIGNET_APP_APPLE_ID=\(appAppleId)\n" }
        try env.write(to: directory.appendingPathComponent("fixtures.env"), atomically: true, encoding: .utf8)
        return Summary(
            notifications: count, transactions: transactionCount, forged: forgedLines.count, realtimeRequests: subscriptions.count,
            rootPath: rootPath.path)
    }

    /// Signs `count` notifications and hands each line to `body` (no file needed: a
    /// million-notification benchmark can stream them).
    public func streamNotifications(
        count: Int, pki: TestPKI,
        _ body: (_ line: [UInt8], _ sample: SampleNotification, _ signedTransaction: String?) throws -> Void
    ) throws {
        var generator = SampleNotificationGenerator(
            seed: seed, bundleId: bundleId, environment: environment, appAppleId: appAppleId, start: start, only: only)
        let signer = pki.signer
        for _ in 0..<count {
            let sample = generator.next()
            let signedTransaction = try sample.transactionPayload.map { try signer.sign(payload: $0) }
            let signedRenewal = try sample.renewalPayload.map { try signer.sign(payload: $0) }
            let signedAppTransaction = try sample.appTransactionPayload.map { try signer.sign(payload: $0) }
            let payload = sample.notificationJSON(
                signedTransactionInfo: signedTransaction, signedRenewalInfo: signedRenewal,
                signedAppTransactionInfo: signedAppTransaction)
            try body(Self.envelope("signedPayload", try signer.sign(payload: payload)), sample, signedTransaction)
        }
    }

    static func envelope(_ field: String, _ jws: String) -> [UInt8] {
        Array("{\"\(field)\":\"\(jws)\"}".utf8)
    }
}

/// Appends lines to a file through a buffer (fixture sets reach hundreds of MB).
final class LineFile {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(_ url: URL) throws {
        // A file that cannot be created fails the open below, with its reason.
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: 0)
    }

    func append(_ line: [UInt8]) throws {
        buffer += line
        buffer.append(0x0A)
        if buffer.count > 1 << 20 { try flush() }
    }

    func flush() throws {
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        try flush()
        try handle.close()
    }
}

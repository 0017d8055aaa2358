import AppStoreModels
import Foundation
import SignetCore
import SignetOpenSSL
import SignetTestSupport

/// What the `signet backfill` end-to-end tests share: notifications made by `signet fixtures`
/// (with their test PKI), an App Store Connect API key in a `.p8` file, a fake App Store
/// Server API holding every notification, and runs of the `signet` binary against it.
struct BackfillTestBed {
    let directory: TemporaryDirectory
    /// The fixture notifications, one `{"signedPayload": ...}` line each, in order.
    let lines: [String]
    /// SIGNET_ROOT_CERTS, SIGNET_ENVIRONMENT, SIGNET_BUNDLE_ID of the fixtures, and the API key's variables.
    let environment: [String: String]
    let fake: FakeAppStoreAPI

    static let keyId = "BACKFILL01"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"

    /// When the fake says each notification was sent (UNIX ms), in line order.
    let sentDates: [Int64]

    /// Makes `count` fixture notifications and a fake holding all of them, sent evenly over
    /// the `spread` before the last hour (so a backfill of 72h splits them over several sub-windows).
    /// The fake says Apple never delivered those at the indices in `failed`.
    static func make(
        count: Int, pageSize: Int = 20, spread: Int64 = 60 * 3_600_000, environment store: AppStoreEnvironment = .sandbox,
        failed: Set<Int> = []
    ) async throws -> BackfillTestBed {
        let directory = try TemporaryDirectory(prefix: "signet-backfill")
        let fixtures = directory.url.appendingPathComponent("fixtures")
        let made = try await SignetProcess.output(["fixtures", "--out", fixtures.path, "--count", String(count)], timeout: 300)
        guard made.exitCode == 0 else { throw FakeAppStoreAPIError("signet fixtures failed: \(made.stderr)") }
        var environment = try FixturesEnvironment.read(fixtures.path)
        guard let bundleId = environment["SIGNET_BUNDLE_ID"] else { throw FakeAppStoreAPIError("no SIGNET_BUNDLE_ID in fixtures.env") }
        let lines = try String(contentsOf: fixtures.appendingPathComponent("notifications.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)

        let key = try ECPrivateKey(generating: .p256)
        let keyFile = directory.url.appendingPathComponent("AuthKey_\(keyId).p8")
        try key.pemEncoded.write(to: keyFile, atomically: true, encoding: .utf8)
        let check = FakeAppStoreAPIJWTCheck(keyId: keyId, issuerId: issuerId, bundleId: bundleId, publicKey: try key.publicKey)
        let fake = try await FakeAppStoreAPI.start(environment: store, jwtCheck: check)
        fake.setPageSizes(notifications: pageSize)
        let first = WallClock.milliseconds() - 3_600_000 - spread
        let sentDates = lines.indices.map { first + Int64($0) * spread / Int64(max(1, lines.count)) }
        fake.addNotifications(try lines.enumerated().map { index, line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let payload = object?["signedPayload"] as? String else { throw FakeAppStoreAPIError("no signedPayload: \(line)") }
            return FakeAppStoreAPI.StoredNotification(signedPayload: payload, sentDate: sentDates[index], failed: failed.contains(index))
        })
        environment["SIGNET_APPSTORE_KEY_ID"] = keyId
        environment["SIGNET_APPSTORE_ISSUER_ID"] = issuerId
        environment["SIGNET_APPSTORE_PRIVATE_KEY"] = keyFile.path
        environment["SIGNET_APPSTORE_API_URL"] = fake.baseURL
        if store == .production { environment["SIGNET_ENVIRONMENT"] = "Production" }
        return BackfillTestBed(directory: directory, lines: lines, environment: environment, fake: fake, sentDates: sentDates)
    }

    /// Runs `body` with a bed made by ``make(count:pageSize:spread:)``, then removes it.
    static func with(
        count: Int, pageSize: Int = 20, environment: AppStoreEnvironment = .sandbox, _ body: (BackfillTestBed) async throws -> Void
    ) async throws {
        let bed = try await make(count: count, pageSize: pageSize, environment: environment)
        do {
            try await body(bed)
        } catch {
            await bed.tearDown()
            throw error
        }
        await bed.tearDown()
    }

    func tearDown() async {
        await fake.stop()
        directory.remove()
    }

    /// A fresh data directory (not created: the first run creates it).
    func dataDir(_ name: String) -> String { directory.path("data-\(name)") }

    /// Runs `signet arguments` with the bed's environment and `SIGNET_DATA_DIR=dataDir`.
    func signet(_ arguments: [String], dataDir: String, stdin: [String] = [], extra: [String: String] = [:]) async throws -> SignetProcess.Result {
        var environment = self.environment
        environment["SIGNET_DATA_DIR"] = dataDir
        environment.merge(extra) { $1 }
        let input = stdin.isEmpty ? Data() : Data((stdin.joined(separator: "\n") + "\n").utf8)
        let result = try await SignetProcess.output(arguments, stdin: input, environment: environment, timeout: 240)
        if result.exitCode == -1 { throw FakeAppStoreAPIError("signet \(arguments.joined(separator: " ")) timed out: \(result.stderr)") }
        return result
    }

    /// Starts `signet backfill --since 72h` with slow answers from the fake (so it is mid-run),
    /// sends `signal` once its checkpoint records `pages` pages, and waits for it to exit.
    /// The fake answers at full speed again afterwards.
    func backfillInterrupted(by signal: Int32, afterPages pages: Int, dataDir: String) async throws -> ChildProcess {
        fake.setResponseDelay(.milliseconds(200))
        defer { fake.setResponseDelay(.zero) }
        var environment = self.environment
        environment["SIGNET_DATA_DIR"] = dataDir
        let child = try ChildProcess.signet(["backfill", "--since", "72h"], environment: environment, stdin: false)
        let checkpoint = dataDir + "/backfill.json"
        let midway = await child.waitUntil(timeout: .seconds(120)) { BackfillCLIEndToEndTests.committedPages(checkpoint) >= pages || !child.isRunning }
        guard midway, child.isRunning else { throw FakeAppStoreAPIError("the backfill ended before the signal: \(child.stderrTail())") }
        child.send(signal)
        guard await child.exit(within: .seconds(30)) != nil else { throw FakeAppStoreAPIError("the backfill did not exit after signal \(signal)") }
        return child
    }

    /// `signet state show` of every purchase an event named, by original transaction id.
    func states(of events: [String], dataDir: String) async throws -> [String: String] {
        var states: [String: String] = [:]
        for id in Set(events.compactMap { Self.field("originalTransactionId", of: $0) }) {
            let shown = try await signet(["state", "show", "--original-transaction-id", id], dataDir: dataDir)
            states[id] = "\(shown.exitCode) \(shown.stdoutText)"
        }
        return states
    }

    /// A string field of a JSON line.
    static func field(_ name: String, of line: String) -> String? {
        ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?[name] as? String
    }
}

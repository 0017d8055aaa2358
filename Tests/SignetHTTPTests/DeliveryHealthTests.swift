import AppStoreModels
import Foundation
import Logging

import Signet
import SignetAppStorePipeline
import SignetCore
import SignetFixtures
import SignetHTTP
import SignetOpenSSL
import SignetTestSupport
import Synchronization
import Testing

/// `appstore_delivery_health` in a real webhook pipeline against the fake App Store Server API:
/// Apple's TEST notification comes back through the webhook (the test plays Apple's delivery),
/// then the webhook becomes unreachable and the round trip, the metrics and the log say so
/// within the timeout; `signet appstore health` prints both.
@Suite("delivery health: a TEST notification round trip through the webhook, and its failure")
struct DeliveryHealthTests {
    static let keyId = "HEALTHKEY1", issuerId = "57246542-96fe-1a63-e053-0824d011072a", bundleId = "com.example.signet"

    @Test("a round trip succeeds while Apple reaches the webhook; when it cannot, the next fails within the timeout with Apple's attempts; `signet appstore health` prints both")
    func roundTrips() async throws {
        let directory = try TemporaryDirectory(prefix: "signet-health")
        defer { directory.remove() }
        let root = try FixtureSet(directory: directory.url).write(count: 1).rootPath
        // TEST notifications signed by the same PKI, signed a little in the past.
        var tests = FixtureSet(directory: directory.url, seed: 7, start: FixtureSet.start(endingBefore: WallClock.milliseconds(), count: 3))
        tests.only = [NotificationCombination(.test)]
        _ = try tests.write(count: 3)
        let payloads = try WebhookHarness.lines(directory.path("notifications.ndjson")).map { line -> String in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
            return try #require(object["signedPayload"])
        }
        try #require(payloads.count == 3)

        let key = try ECPrivateKey(generating: .p256)
        let keyFile = directory.path("AuthKey.p8")
        try key.pemEncoded.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let fake = try await FakeAppStoreAPI.start(
            environment: .sandbox,
            jwtCheck: FakeAppStoreAPIJWTCheck(keyId: Self.keyId, issuerId: Self.issuerId, bundleId: Self.bundleId, publicKey: try key.publicKey))
        do {
            try await roundTrips(directory: directory, root: root, payloads: payloads, keyFile: keyFile, fake: fake)
        } catch {
            await fake.stop()
            throw error
        }
        await fake.stop()
    }

    func roundTrips(directory: TemporaryDirectory, root: String, payloads: [String], keyFile: String, fake: FakeAppStoreAPI) async throws {
        let stateFile = directory.path("delivery-health.json")
        let yaml = """
            stores: { default: { type: sqlite, path: \(directory.path("signet.sqlite")) } }
            source: { type: http, address: 127.0.0.1:0 }
            stages:
              - type: decode
              - { type: verify, roots: \(root), environment: Sandbox, bundle_id: \(Self.bundleId) }
              - { type: appstore_delivery_health, interval: 4s, timeout: 10s, poll: 1s, state_file: \(stateFile), store: default }
              - type: dedupe
              - type: transition
              - { type: fanout, default_sinks: [events] }
            sinks:
              events: { type: file, path: \(directory.path("events.ndjson")) }
            dead_letter: { type: file, path: \(directory.path("dead.ndjson")) }
            settings: { progress_interval: 0s }
            """
        let environment = [
            "SIGNET_APPSTORE_KEY_ID": Self.keyId, "SIGNET_APPSTORE_ISSUER_ID": Self.issuerId, "SIGNET_APPSTORE_PRIVATE_KEY": keyFile,
            "SIGNET_BUNDLE_ID": Self.bundleId, "SIGNET_ENVIRONMENT": "Sandbox", "SIGNET_APPSTORE_API_URL": fake.baseURL,
        ]
        // Apple: each requested TEST notification is the next payload (the first round trip
        // starts as the stage opens); delivered to the webhook while `reachable`.
        fake.setTestNotificationPayload(payloads[0])
        let pipeline = try PipelineLoader(registry: Signet.makeRegistry(), environment: environment).load(yaml: yaml, file: "health.yaml")
        let source = try #require(pipeline.source as? HTTPSource)
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }
        let webhook = "http://127.0.0.1:\(try await WebhookHarness.boundPort(of: source))/notifications"

        let reachable = Atomic(true)
        let delivering = Task {
            var delivered = 0
            while !Task.isCancelled {
                let requested = fake.requests(.requestTestNotification).count
                if requested > delivered {
                    if reachable.load(ordering: .relaxed) {
                        _ = try? await Curl.request(webhook, body: #"{"signedPayload":""# + payloads[min(requested - 1, 2)] + #""}"#)
                    }
                    delivered = requested
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { delivering.cancel() }

        func trips() -> [DeliveryRoundTrip] { (try? DeliveryHealthFile.read(stateFile)) ?? [] }
        var deadline = ContinuousClock.now + .seconds(60)
        while trips().first?.result == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let first = try #require(trips().first)
        #expect(first.result == .success && first.seenAt != nil && first.notificationUUID != nil, "\(first)")

        // The webhook becomes unreachable: Apple's attempts time out.
        reachable.store(false, ordering: .relaxed)
        fake.setTestNotificationResults(["TIMED_OUT", "TIMED_OUT"])
        fake.setTestNotificationPayload(payloads[2])
        let failedAfter = trips().count
        deadline = ContinuousClock.now + .seconds(60)
        while !trips().dropFirst(failedAfter).contains(where: { $0.result == .failure }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        await runner.requestStop()
        _ = try await run.value
        let failure = try #require(trips().first { $0.result == .failure }, "\(trips())")
        #expect(failure.seenAt == nil && failure.attempts.map(\.result) == ["TIMED_OUT", "TIMED_OUT"], "\(failure)")
        #expect(failure.detail?.contains("TIMED_OUT") == true && failure.detail?.contains("reachable") == true, "\(failure.detail ?? "")")
        #expect(failure.requestedAt - first.requestedAt < 60_000)

        // `signet appstore health` prints both and exits 1 (the newest failed).
        let printed = try await SignetProcess.output(["appstore", "health", "--state-file", stateFile], timeout: 60)
        #expect(printed.exitCode == 1, "\(printed.stderr)")
        #expect(printed.stdoutText.contains("  ok ") && printed.stdoutText.contains("FAILED") && printed.stdoutText.contains("TIMED_OUT"), "\(printed.stdoutText)")
        let none = try await SignetProcess.output(["appstore", "health", "--state-file", directory.path("none.json")], timeout: 60)
        #expect(none.exitCode == 2 && none.stderr.contains("no round trip recorded"), "\(none.stderr)")
    }
}

import AppStoreModels
import Foundation
import Logging
import Prometheus
import SignetAppStoreAPI
import SignetAppStoreAPITestSupport
import SignetAppStorePipeline
import SignetCore
import SignetStateTestSupport
import SignetTestSupport
import Testing

/// `appstore_delivery_health` round trips one by one against the fake API: the metrics each
/// result leaves, and what a failure says.
@Suite("appstore_delivery_health: round trip results, metrics and diagnosis")
struct DeliveryHealthStageTests {
    /// A TEST notification's signed payload as Apple's status returns it (the stage reads its id
    /// without verifying; the webhook verifies what arrives).
    static func payload(uuid: String) -> String {
        let body = Array(#"{"notificationType":"TEST","notificationUUID":"\#(uuid)"}"#.utf8)
        return "eyJhbGciOiJFUzI1NiJ9." + Data(body).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "") + ".c2ln"
    }

    @Test("success, failure with Apple's attempts, and Apple delivering to someone else: metrics by result, the last success's time and latency, attempts by result")
    func results() async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake(.sandbox)
        let registry = PrometheusCollectorRegistry()
        var options = AppStoreDeliveryHealthStage.Options()
        options.timeout = .seconds(10)
        options.poll = .milliseconds(200)
        options.stateFile = ""
        let stage = AppStoreDeliveryHealthStage(
            options: options, store: nil, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() },
            metrics: PrometheusMetricsFactory(registry: registry)) { try bed.client(fake) }
        let client = try bed.client(fake)
        do {
            // Seen: the TEST notification passes the stage as soon as Apple is asked for it.
            fake.setTestNotificationPayload(Self.payload(uuid: "uuid-1"))
            let watcher = Task {
                while fake.requests(.requestTestNotification).isEmpty { try await Task.sleep(for: .milliseconds(20)) }
                var batch = RecordBatch(records: [Fixture.record(Fixture.notification(.test, uuid: "uuid-1", signed: WallClock.milliseconds()), line: 1)])
                try await stage.process(&batch)
            }
            let success = try await stage.roundTrip(client: client)
            try await watcher.value
            #expect(success.result == .success && success.notificationUUID == "uuid-1" && (success.latency ?? -1) >= 0, "\(success)")

            // Apple could not deliver it.
            var short = options
            short.timeout = .seconds(2)
            let impatient = AppStoreDeliveryHealthStage(
                options: short, store: nil, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() },
                metrics: PrometheusMetricsFactory(registry: registry)) { try bed.client(fake) }
            fake.setTestNotificationResults(["NO_RESPONSE", "SSL_ISSUE"])
            fake.setTestNotificationPayload(Self.payload(uuid: "uuid-2"))
            let failure = try await impatient.roundTrip(client: client)
            #expect(failure.result == .failure && failure.detail?.contains("NO_RESPONSE, SSL_ISSUE") == true, "\(failure)")

            // Apple delivered it, but never to this pipeline.
            fake.setTestNotificationResults(["SUCCESS"])
            fake.setTestNotificationPayload(Self.payload(uuid: "uuid-3"))
            let elsewhere = try await impatient.roundTrip(client: client)
            #expect(elsewhere.result == .failure && elsewhere.detail?.contains("never saw it") == true, "\(elsewhere)")
        } catch {
            try? await client.shutdown()
            await fake.stop()
            throw error
        }
        try await client.shutdown()
        await fake.stop()

        let metrics = parsePrometheus(registry.emitToString())
        #expect(metrics[#"signet_delivery_round_trips_total{result="success"}"#] == 1, "\(metrics)")
        #expect(metrics[#"signet_delivery_round_trips_total{result="failure"}"#] == 2)
        #expect(metrics[#"signet_apple_send_attempts_total{result="SUCCESS"}"#] == 2)
        #expect(metrics[#"signet_apple_send_attempts_total{result="NO_RESPONSE"}"#] == 1)
        #expect(metrics[#"signet_apple_send_attempts_total{result="SSL_ISSUE"}"#] == 1)
        #expect((metrics["signet_delivery_round_trip_last_success_timestamp_seconds"] ?? 0) > 1_700_000_000)
        #expect((metrics["signet_delivery_round_trip_seconds"] ?? -1) >= 0)
    }

    @Test("a restart reports the last success its state file holds at once, not 0 until the next success (the stale alert ignores 0)")
    func restartRestoresLastSuccess() async throws {
        let bed = try APITestBed()
        let fake = try await bed.startFake(.sandbox)
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path("delivery-health.json")
        // A previous run: a success three hours ago, then a failure.
        let threeHoursAgo = WallClock.milliseconds() - 3 * 3_600_000
        try folder.write("delivery-health.json", """
            [{"token": "t1", "requestedAt": \(threeHoursAgo - 2000), "seenAt": \(threeHoursAgo), "attempts": [], "result": "success"},
             {"token": "t2", "requestedAt": \(threeHoursAgo + 3_600_000), "attempts": [], "result": "failure"}]
            """)

        let registry = PrometheusCollectorRegistry()
        var options = AppStoreDeliveryHealthStage.Options()
        options.stateFile = path
        options.timeout = .seconds(60)
        options.poll = .milliseconds(200)
        // Apple cannot deliver: this run's round trip never succeeds.
        fake.setTestNotificationResults(["NO_RESPONSE"])
        fake.setTestNotificationPayload(Self.payload(uuid: "never-seen"))
        let stage = AppStoreDeliveryHealthStage(
            options: options, store: nil, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() },
            metrics: PrometheusMetricsFactory(registry: registry)) { try bed.client(fake) }
        try await stage.open()
        let metrics = parsePrometheus(registry.emitToString())
        try await stage.close()
        await fake.stop()
        #expect(metrics["signet_delivery_round_trip_last_success_timestamp_seconds"] == Double(threeHoursAgo) / 1000, "\(metrics)")
    }
}

import Foundation
import Signet
import Synchronization
import SignetCore
import SignetKafka
import SignetState
import SignetTestSupport
import Testing

extension KafkaEndToEndTests {
    /// Issue 11 §1 on Kafka: Pipelines/kafka.yaml in process (mock broker, kcat producing and
    /// reading), its transition stage given a clock the test moves. With the topic idle, the
    /// running pipeline's sweep publishes `expired` to the output topic, once.
    @Test(.timeLimit(.minutes(10)))
    func kafkaPipelineEmitsTimeDrivenExpiries() async throws {
        let corpus = try StateCorpus.get()
        let scope = try KafkaScope("expiry")
        defer { scope.close() }
        let cluster = try scope.cluster(topics: [("notifications", 1), ("entitlements", 1), ("dead-letters", 1)])
        var settings = PipelineSettings(brokers: cluster.bootstrapServers, group: "expiry", dataDir: scope.path("data"))
        settings.sessionTimeoutMs = 6000
        var environment = settings.environment
        environment["SIGNET_ROOT_CERTS"] = corpus.environment["SIGNET_ROOT_CERTS"]
        var pipeline = try PipelineLoader(registry: Signet.makeRegistry(), environment: environment)
            .load(file: FixturePaths.packageRoot.appendingPathComponent("Pipelines/kafka.yaml").path)
        let index = try #require(pipeline.stages.firstIndex { $0 is TransitionStage })
        let loaded = try #require(pipeline.stages[index] as? TransitionStage)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let clock = SweepClock(now)
        var options = loaded.options
        options.clock = { clock.now }
        options.expirySweep = .milliseconds(50)
        // The pipeline's own store resource, which the dedupe stage shares.
        let store = try #require(pipeline.resources.first { $0.name == "default" }?.resource as? StateStoreResource)
        pipeline.stages[index] = TransitionStage(resource: store, options: options)
        let runner = PipelineRunner(pipeline: pipeline)
        let run = Task { try await runner.run() }

        let granted = try #require(corpus.customers.first { $0.name == "granted" })
        try Kcat.produce(brokers: cluster.bootstrapServers, topic: "notifications", values: granted.lines)
        func events() throws -> [[String: Any]] {
            try Kcat.readAll(brokers: cluster.bootstrapServers, topic: "entitlements").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any]
            }
        }
        let fromInput = granted.expectedEvents.count
        #expect(try await eventually(timeout: .seconds(120)) { try events().count >= fromInput }, "input events never arrived")
        #expect(try events().map { $0["type"] as? String ?? "" } == granted.expectedEvents)

        // A year passes on the sweep's clock; nothing arrives on the topic.
        clock.set(now + 400 * StateE2E.day)
        #expect(try await eventually(timeout: .seconds(120)) { try events().count > fromInput }, "no sweep event")
        await runner.requestStop()
        let summary = try await run.value
        let all = try events()
        let swept = all.dropFirst(fromInput)
        #expect(swept.map { $0["type"] as? String } == ["expired"], "\(swept)")
        #expect(swept.first?["source"] as? String == "clock")
        #expect(swept.first?["originalTransactionId"] as? String == granted.originalTransactionId)
        #expect(summary.read == granted.lines.count && summary.passed == granted.lines.count, "\(summary)")
        #expect(summary.delivered == all.count)
    }
}

/// The sweep's clock in ms since 1970, moved by the test.
private final class SweepClock: Sendable {
    private let value: Atomic<Int64>
    init(_ start: Int64) { value = Atomic(start) }
    var now: Int64 { value.load(ordering: .acquiring) }
    func set(_ instant: Int64) { value.store(instant, ordering: .releasing) }
}

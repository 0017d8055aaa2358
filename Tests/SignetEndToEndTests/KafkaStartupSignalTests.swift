import Foundation
import SignetKafka
import SignetTestSupport
import Testing

extension KafkaEndToEndTests {
    /// SIGTERM at many moments of start-up, most of them while the consumer is still joining its
    /// group: every run drains and exits 0. librdkafka 2.0.2 aborted in the cooperative-sticky
    /// assignor when a member closed mid-join (about 1 run in 3 at 1.5-3.5 s); the consumer now
    /// lets the join settle before closing (KafkaConsumerClient.settleJoin). A signal while the
    /// pipeline still loads is caught and delivered once the service group traps signals
    /// (StartupSignals); the first moment is 200 ms because one before `main` runs (about 70 ms
    /// for the debug binary here, more on a loaded CI machine) ends any process.
    @Test(.timeLimit(.minutes(5)))
    func sigtermAtEveryMomentOfStartupDrains() async throws {
        let scope = try KafkaScope("startup-term")
        defer { scope.close() }
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let delays: [Duration] = stride(from: 200, through: 4_200, by: 400).map { .milliseconds($0) }
        for (index, delay) in delays.enumerated() {
            let settings = PipelineSettings(
                brokers: cluster.bootstrapServers, group: "startup-\(index)", dataDir: scope.path("data-\(index)"))
            let child = try scope.startPipeline("term-\(index)", settings)
            try await Task.sleep(for: delay)
            child.send(SIGTERM)
            let status = try await child.waitForExit(timeout: .seconds(40))
            #expect(status == 0 && !child.killedBySignal, "SIGTERM after \(delay): status \(String(describing: status)); \(child.stderrTail())")
            #expect(!child.stderr.contains("Assertion"), "SIGTERM after \(delay): \(child.stderrTail())")
        }
    }
}

import Foundation
import SignetFixtures
import SignetKafka
import SignetOpenSSL
import SignetTestSupport
import Testing

/// Issue 12's poison pill, on Kafka: the whole extreme-number corpus (trusted and attacker
/// signers) produced into the input topic of `signet run` (Pipelines/kafka.yaml, librdkafka
/// mock cluster). The process must stay up through all of it, commit past every record,
/// and dead-letter each rejected one with a known reason code.
@Suite("Extreme numbers through signet run on Kafka")
struct ExtremeNumberKafkaTests {
    @Test(.timeLimit(.minutes(10)))
    func corpusThroughKafka() async throws {
        let scope = try KafkaScope("extreme")
        defer { scope.close() }
        let trusted = try TestPKI()
        let attacker = try TestPKI(name: "Attacker")
        let rootPath = scope.path("extreme-root.der")
        try Data(trusted.root.derEncoded).write(to: URL(fileURLWithPath: rootPath))
        let corpus = ExtremeNumberCorpus(bundleId: KafkaInput.bundleId, now: Int64(Date().timeIntervalSince1970) * 1000 - 1000)
        let good = try corpus.lines(signedBy: trusted.signer)
        let bad = try corpus.lines(signedBy: attacker.signer)
        // A last, plainly broken line: once it is dead-lettered, everything before it (one
        // partition, processed in order) has been handled.
        let sentinel = #"{"signedPayload": "sentinel"}"#
        let values = (good + bad).map { String(decoding: $0.bytes, as: UTF8.self) } + [sentinel]

        let cluster = try scope.cluster(topics: [("notifications", 1), ("entitlements", 2), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let settings = PipelineSettings(brokers: brokers, group: "extreme", dataDir: scope.path("data"))
        let pipeline = try scope.startPipeline(
            "pipeline", settings, extraEnvironment: ["SIGNET_ROOT_CERTS": rootPath, "SIGNET_APP_APPLE_ID": "4242"])
        for start in stride(from: 0, to: values.count, by: 500) {
            try Kcat.produce(brokers: brokers, topic: settings.input, values: Array(values[start..<min(start + 500, values.count)]))
        }

        var deadLetters: [KafkaMessage] = []
        let done = try await eventually(timeout: .seconds(300), interval: .seconds(1)) {
            deadLetters = try Kcat.readAll(brokers: brokers, topic: settings.deadLetters)
            return deadLetters.contains { $0.payload == sentinel } || !pipeline.isRunning
        }
        #expect(pipeline.isRunning, "the pipeline died: \(pipeline.stderrTail())")
        try #require(done, "the sentinel was not dead-lettered within 300 s: \(deadLetters.count) dead letters; \(pipeline.stderrTail())")

        pipeline.send(SIGTERM)
        let status = try await pipeline.waitForExit(timeout: .seconds(60))
        #expect(status == 0 && !pipeline.killedBySignal, "pipeline exit \(String(describing: status)): \(pipeline.stderrTail())")

        let summary = try scope.summary("pipeline")
        let read = summary["read"] as? Int ?? -1
        let rejected = summary["rejected"] as? Int ?? -1
        let passed = summary["passed"] as? Int ?? -1
        let dropped = summary["dropped"] as? Int ?? -1
        #expect(read == values.count, "\(summary)")
        #expect(passed + rejected + dropped == read, "\(summary)")
        #expect(rejected >= bad.count + 1, "every attacker line and the sentinel are rejected: \(summary)")
        #expect(passed > 0, "\(summary)")

        deadLetters = try Kcat.readAll(brokers: brokers, topic: settings.deadLetters)
        #expect(deadLetters.count == rejected, "one dead letter per rejection")
        for letter in deadLetters {
            let reason = letter.header("signet-reason") ?? "<none>"
            #expect(KnownReasonCodes.all.contains(reason), "dead letter reason \(reason)")
        }
        // Every attacker line is among the dead letters, byte for byte.
        let deadPayloads = Set(deadLetters.map(\.payload))
        #expect(bad.allSatisfy { deadPayloads.contains(String(decoding: $0.bytes, as: UTF8.self)) })

        // Committed past every record: the group has nothing left to read.
        let unread = try Kcat.readUncommitted(brokers: brokers, group: settings.group, topic: settings.input, timeout: .seconds(20))
        #expect(unread.isEmpty, "\(unread.count) records left uncommitted")
    }
}

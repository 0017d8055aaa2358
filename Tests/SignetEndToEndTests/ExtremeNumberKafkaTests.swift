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
        let lines = (good + bad).map { String(decoding: $0.bytes, as: UTF8.self) }

        let cluster = try scope.cluster(topics: [("notifications", 1), ("entitlements", 2), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let settings = PipelineSettings(brokers: brokers, group: "extreme", dataDir: scope.path("data"))
        let pipeline = try scope.startPipeline(
            "pipeline", settings, extraEnvironment: ["SIGNET_ROOT_CERTS": rootPath, "SIGNET_APP_APPLE_ID": "4242"])
        let assigned = try await eventually(timeout: .seconds(60)) {
            pipeline.stderr.contains("assigned notifications") || !pipeline.isRunning
        }
        try #require(assigned && pipeline.isRunning, "the pipeline did not start: \(pipeline.stderrTail())")

        // The mock cluster keeps only the last ~5 MB of a partition, so the corpus goes in
        // chunks, each ended by a plainly broken sentinel line: once the sentinel is
        // dead-lettered, the chunk before it (one partition, handled in order) is done.
        var deadLetters: [Int64: KafkaMessage] = [:]
        var produced = 0
        for (index, start) in stride(from: 0, to: lines.count, by: 250).enumerated() {
            let sentinel = #"{"signedPayload": "sentinel-\#(index)"}"#
            let chunk = Array(lines[start..<min(start + 250, lines.count)]) + [sentinel]
            try Kcat.produce(brokers: brokers, topic: settings.input, values: chunk)
            produced += chunk.count
            let done = try await eventually(timeout: .seconds(120), interval: .milliseconds(500)) {
                for letter in try Kcat.readAll(brokers: brokers, topic: settings.deadLetters) { deadLetters[letter.offset] = letter }
                return deadLetters.values.contains { $0.payload == sentinel } || !pipeline.isRunning
            }
            try #require(pipeline.isRunning, "the pipeline died at chunk \(index): \(pipeline.stderrTail())")
            try #require(done, "chunk \(index) not handled within 120 s: \(pipeline.stderrTail())")
        }

        pipeline.send(SIGTERM)
        let status = try await pipeline.waitForExit(timeout: .seconds(60))
        #expect(status == 0 && !pipeline.killedBySignal, "pipeline exit \(String(describing: status)): \(pipeline.stderrTail())")

        let summary = try scope.summary("pipeline")
        let read = summary["read"] as? Int ?? -1
        let rejected = summary["rejected"] as? Int ?? -1
        let passed = summary["passed"] as? Int ?? -1
        let dropped = summary["dropped"] as? Int ?? -1
        #expect(read == produced, "\(summary)")
        #expect(passed + rejected + dropped == read, "\(summary)")
        #expect(rejected >= bad.count, "every attacker line is rejected: \(summary)")
        #expect(passed > 0, "\(summary)")

        for letter in try Kcat.readAll(brokers: brokers, topic: settings.deadLetters) { deadLetters[letter.offset] = letter }
        #expect(deadLetters.count == rejected, "one dead letter per rejection")
        for letter in deadLetters.values {
            let reason = letter.header("signet-reason") ?? "<none>"
            #expect(KnownReasonCodes.all.contains(reason), "dead letter reason \(reason)")
        }
        // Every attacker line is among the dead letters, byte for byte.
        let deadPayloads = Set(deadLetters.values.map(\.payload))
        #expect(bad.allSatisfy { deadPayloads.contains(String(decoding: $0.bytes, as: UTF8.self)) })

        // Committed past every record: the group has nothing left to read.
        let unread = try Kcat.readUncommitted(brokers: brokers, group: settings.group, topic: settings.input, timeout: .seconds(20))
        #expect(unread.isEmpty, "\(unread.count) records left uncommitted")
    }
}

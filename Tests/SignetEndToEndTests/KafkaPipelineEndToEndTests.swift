import Foundation
import SignetKafka
import SignetTestSupport
import Testing

/// `signet run --pipeline Pipelines/kafka.yaml` as a child process between a mock Kafka
/// cluster and kcat (an independent client), compared with the stdin pipeline on the same input.
///
/// One suite, serialized: every test starts its own broker and processes, and the machine has
/// two shared cores (parallel runs would only make the group joins and timeouts slower).
/// Tests in the other `Kafka*` files extend this suite.
@Suite("Kafka pipeline end to end (signet binary, mock broker, kcat)", .tags(.endToEnd), .serialized)
struct KafkaEndToEndTests {
    /// Steady stream through `signet dev-broker` (a child process): every event once, keyed
    /// by originalTransactionId, with its headers, in per-key order; state as the reference's.
    @Test(.timeLimit(.minutes(10)))
    func steadyStreamThroughDevBroker() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("steady")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value), scope: scope, name: "steady")
        #expect(reference.orderByKey.values.contains { $0.count >= 3 }, "the chains must give some purchases several events")

        let broker = try scope.start(
            "dev-broker", ["dev-broker", "--topic", "notifications:4", "--topic", "entitlements:4", "--topic", "dead-letters:1"])
        var brokers = ""
        try await eventually(timeout: .seconds(30), interval: .milliseconds(50)) {
            let first = broker.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            if first.count > 1, first[0].hasPrefix("127.0.0.1:") { brokers = String(first[0]) }
            return !brokers.isEmpty || !broker.isRunning
        }
        try #require(!brokers.isEmpty, "dev-broker printed no address: \(broker.stderrTail())")
        #expect(brokers.split(separator: ",").allSatisfy { $0.hasPrefix("127.0.0.1:") })

        let dataDir = scope.url.appendingPathComponent("data")
        let settings = PipelineSettings(brokers: brokers, group: "steady", dataDir: dataDir.path)
        let pipeline = try scope.startPipeline("pipeline", settings)
        try await producePaced(brokers: brokers, topic: settings.input, input.lines)

        var output: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            return distinctEventIds(output).count >= reference.byId.count || !pipeline.isRunning
        }
        #expect(complete, "not every event arrived within 60 s: \(distinctEventIds(output).count)/\(reference.byId.count); \(pipeline.stderrTail())")
        try await Task.sleep(for: .milliseconds(500))  // anything late (a duplicate) shows up too
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)

        pipeline.send(SIGTERM)
        let status = try await pipeline.waitForExit(timeout: .seconds(30))
        #expect(status == 0 && !pipeline.killedBySignal, "pipeline exit \(String(describing: status)): \(pipeline.stderrTail())")

        try checkEvents(output, against: reference, allowDuplicates: false)
        #expect(output.allSatisfy { $0.header("signet-event-id") != nil && $0.header("signet-event-type") != nil })
        #expect(try Kcat.readAll(brokers: brokers, topic: settings.deadLetters).isEmpty)
        try checkState(dataDir: dataDir, reference: reference)
        let summary = try scope.summary("pipeline")
        #expect(summary["read"] as? Int == input.lines.count)
        #expect(summary["delivered"] as? Int == reference.events.count)

        broker.send(SIGTERM)
        #expect(try await broker.waitForExit(timeout: .seconds(10)) == 0, "dev-broker did not stop on SIGTERM: \(broker.stderrTail())")
    }

    /// Every notification produced twice (Apple's retries: back to back and again at the end),
    /// plus forged lines: each event exactly once; each forged line on the dead-letter topic with
    /// its original bytes and a signet-reason header (the reasons the stdin pipeline gives).
    @Test(.timeLimit(.minutes(10)))
    func duplicatesOnceAndForgedLinesToDeadLetters() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("dupes")
        defer { scope.close() }
        let reference = try KafkaReference(lines: input.lines.map(\.value) + input.forged, scope: scope, name: "dupes")
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let dataDir = scope.url.appendingPathComponent("data")
        let settings = PipelineSettings(brokers: brokers, group: "dupes", dataDir: dataDir.path)
        let pipeline = try scope.startPipeline("pipeline", settings)

        var doubled: [InputLine] = []
        for line in input.lines { doubled += [line, line] }
        let late = Array(input.lines.prefix(40))
        try await producePaced(brokers: brokers, topic: settings.input, doubled, chunk: 60)
        try Kcat.produce(brokers: brokers, topic: settings.input, values: input.forged)
        try Kcat.produce(brokers: brokers, topic: settings.input, late)
        let total = doubled.count + input.forged.count + late.count

        var output: [KafkaMessage] = []
        var deadLetters: [KafkaMessage] = []
        let complete = try await eventually(timeout: .seconds(120), interval: .milliseconds(400)) {
            output = try Kcat.readAll(brokers: brokers, topic: settings.output)
            deadLetters = try Kcat.readAll(brokers: brokers, topic: settings.deadLetters)
            return (distinctEventIds(output).count >= reference.byId.count && deadLetters.count >= input.forged.count)
                || !pipeline.isRunning
        }
        #expect(complete, "incomplete after 60 s: \(distinctEventIds(output).count)/\(reference.byId.count) events, \(deadLetters.count)/\(input.forged.count) dead letters; \(pipeline.stderrTail())")
        pipeline.send(SIGTERM)
        let status = try await pipeline.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "pipeline exit \(String(describing: status)): \(pipeline.stderrTail())")
        output = try Kcat.readAll(brokers: brokers, topic: settings.output)
        deadLetters = try Kcat.readAll(brokers: brokers, topic: settings.deadLetters)

        try checkEvents(output, against: reference, allowDuplicates: false)
        #expect(deadLetters.map(\.payload).sorted() == input.forged.sorted(), "dead letters must be the forged lines, byte for byte")
        #expect(deadLetters.allSatisfy { ($0.header("signet-reason") ?? "").isEmpty == false && $0.header("signet-source") != nil })
        let reasons = deadLetters.compactMap { $0.header("signet-reason") }.sorted()
        let wantReasons = reference.deadLetters.compactMap { $0["reason"] as? String }.sorted()
        #expect(reasons == wantReasons, "dead-letter reasons differ from the stdin pipeline's")
        try checkState(dataDir: dataDir, reference: reference)

        let summary = try scope.summary("pipeline")
        #expect(summary["read"] as? Int == total)
        let dropped = summary["droppedByReason"] as? [String: Int] ?? [:]
        #expect(dropped["duplicate"] == doubled.count / 2 + late.count, "every repeat is dropped as a duplicate: \(dropped)")
        #expect(summary["delivered"] as? Int == reference.events.count)
    }
}

import Foundation
import SignetKafka
import SignetTestSupport
import Testing

extension KafkaEndToEndTests {
    /// A `signet run` member whose commits the coordinator refuses (OffsetCommit answered
    /// REBALANCE_IN_PROGRESS) goes on processing; then the coordinator fences it (a Heartbeat
    /// answered ILLEGAL_GENERATION), so librdkafka reports its assignment lost and the finished
    /// records can never be committed by it. It must say so at error level, with the offsets,
    /// and go on (the group rebalances; the records are read again by the next owner). The
    /// commits pass again before the stop, so the stop is clean: a loss during the run is the
    /// log's and signet_kafka_records_to_redo_total's, only one while closing fails the stop
    /// (KafkaLostPartitionTests).
    @Test(.timeLimit(.minutes(10)))
    func partitionsLostDuringTheRunAreReportedAndTheRunGoesOn() async throws {
        let input = try KafkaInput.get()
        let scope = try KafkaScope("lost")
        defer { scope.close() }
        let cluster = try scope.cluster(topics: [("notifications", 4), ("entitlements", 4), ("dead-letters", 1)])
        let brokers = cluster.bootstrapServers
        let settings = PipelineSettings(brokers: brokers, group: "lost", dataDir: scope.path("data"))
        let half = input.lines.count / 2
        let member = try scope.startPipeline("member", settings)
        try Kcat.produce(brokers: brokers, topic: settings.input, Array(input.lines[..<half]))
        var published = 0
        let flowing = try await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            published = try Kcat.readAll(brokers: brokers, topic: settings.output).count
            return published >= 10 || !member.isRunning
        }
        try #require(flowing && member.isRunning, "the member never published: \(member.stderrTail())")
        let settled = try await eventually(timeout: .seconds(60), interval: .milliseconds(300)) {
            let now = try Kcat.readAll(brokers: brokers, topic: settings.output).count
            defer { published = now }
            return now == published
        }
        try #require(settled)

        // Commits refused from here on; the second half is processed and published meanwhile.
        try cluster.pushRequestErrors(apiKey: 8, error: 27, count: 100_000)  // OffsetCommit: REBALANCE_IN_PROGRESS
        try Kcat.produce(brokers: brokers, topic: settings.input, Array(input.lines[half...]))
        let processed = try await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            try Kcat.readAll(brokers: brokers, topic: settings.output).count > published || !member.isRunning
        }
        try #require(processed && member.isRunning, "nothing of the second half was published: \(member.stderrTail())")
        try await Task.sleep(for: .milliseconds(500))

        // Fenced: the assignment is lost with finished records uncommitted.
        try cluster.pushRequestErrors(apiKey: 12, error: 22, count: 1)  // Heartbeat: ILLEGAL_GENERATION
        let lost = try await eventually(timeout: .seconds(30), interval: .milliseconds(100)) {
            member.stderr.contains("finished records were not committed") || !member.isRunning
        }
        try #require(lost && member.isRunning, "no lost partition was reported: \(member.stderrTail())")
        let line = member.stderr.split(separator: "\n").first { $0.contains("kafka: lost") && $0.contains("finished records were not committed") }
        #expect(line?.lowercased().contains("error") == true, "not at error level: \(line ?? "")")

        try cluster.clearRequestErrors(apiKey: 8)
        member.send(SIGTERM)
        #expect(try await member.waitForExit(timeout: .seconds(40)) == 0, "a loss during the run failed the stop: \(member.stderrTail())")
        let summary = try scope.summary("member")
        #expect((summary["uncommitted"] as? [String: Any] ?? [:]).isEmpty, "\(summary)")
    }
}

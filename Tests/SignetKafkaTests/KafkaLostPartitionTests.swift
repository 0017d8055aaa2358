import Foundation
import Logging
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

/// A member whose assignment librdkafka reports *lost* (the coordinator fenced it: a
/// Heartbeat answered ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, injected on the mock broker)
/// while finished records wait for a commit the coordinator keeps refusing. Nothing may be
/// committed for a lost partition, so those records will be processed again: the source must
/// say so at error level, count them, and make its close report them as left to redo (what
/// makes `signet run` exit 1 and list them in `--summary-json`). The committed offsets are
/// read by a separate consumer that never joins the group.
@Suite("Kafka partitions lost with finished work uncommitted", .serialized, .timeLimit(.minutes(10)))
struct KafkaLostPartitionTests {
    @Test(arguments: [("ILLEGAL_GENERATION", MockErrors.illegalGeneration), ("UNKNOWN_MEMBER_ID", MockErrors.unknownMemberID)])
    func aLostAssignmentDuringTheRunIsLoggedAndCounted(fencedBy: String, error: Int32) async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = try singlePartitionTopic(cluster, "lost", records: 10)
        let group = uniqueName("g")
        let log = CapturedLog()
        let source = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: log.logger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)

        // Finished, but the coordinator refuses the commit; then it fences the member, which
        // loses its partition and rejoins (re-reading, without finishing, meanwhile).
        try cluster.pushRequestErrors(apiKey: MockErrors.offsetCommit, error: MockErrors.rebalanceInProgress, count: 1000)
        try await source.commit(records.map(\.position))
        try #require(try await fence(source, on: cluster, error: error), "no rebalance after the injected \(fencedBy)")

        let p0 = TopicPartition(topic, 0)
        let lostLines = log.messages(at: .error).filter { $0.contains("kafka: lost \(p0)") }
        #expect(lostLines.count == 1, "errors: \(log.messages(at: .error)); warnings: \(log.messages(at: .warning))")
        #expect(lostLines.first?.contains("10 finished records were not committed (\(p0) at 10)") == true, "\(lostLines)")
        #expect(source.recordsToRedo == 10)

        // The coordinator accepts commits again: a loss during the run is the metric's and the
        // log's, not the stop's (the group rebalances under load; the service goes on).
        try cluster.clearRequestErrors(apiKey: MockErrors.offsetCommit)
        await source.stop()
        try await source.close()

        // Nothing was committed for the lost partition: the next owner reads all 10 again.
        let committed = try brokerCommittedOffsets(cluster, group: group, [p0])
        #expect((committed[p0] ?? -1) < 0, "committed \(committed)")
    }

    /// Issue 53: records still in the stages when the partition is lost finish, publish their
    /// events and are never committed, so the next owner processes them again: counted and
    /// said at error level like finished ones, not "no finished record was waiting".
    @Test func recordsInFlightWhenThePartitionIsLostAreCountedAsRedone() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = try singlePartitionTopic(cluster, "lost-in-flight", records: 10)
        let group = uniqueName("g")
        let log = CapturedLog()
        let source = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: log.logger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)
        // Handed out, not finished: the stages have them when the member is fenced.
        try #require(try await fence(source, on: cluster, error: MockErrors.illegalGeneration), "no rebalance after the fence")

        let p0 = TopicPartition(topic, 0)
        let lostLines = log.messages(at: .error).filter { $0.contains("kafka: lost \(p0)") }
        #expect(lostLines.count == 1, "errors: \(log.messages(at: .error)); warnings: \(log.messages(at: .warning))")
        #expect(lostLines.first?.contains("10 records were still in the stages (\(p0) from 0)") == true, "\(lostLines)")
        #expect(source.recordsToRedo == 10)
        // They finish now: their acknowledgement commits nothing for the lost partition.
        try await source.commit(records.map(\.position))
        await source.stop()
        try await source.close()
        let committed = try brokerCommittedOffsets(cluster, group: group, [p0])
        #expect((committed[p0] ?? -1) < 10, "committed \(committed)")
    }

    /// A lost partition with nothing finished waiting for a commit is no redo: a warning, a clean stop.
    @Test func aLostAssignmentWithNothingFinishedLeavesTheStopClean() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = try singlePartitionTopic(cluster, "lost-clean", records: 10)
        let log = CapturedLog()
        let source = KafkaSource(options: consumerOptions(cluster, group: uniqueName("g"), topics: [topic]), logger: log.logger)
        try await source.open()
        let records = try await drain(source, commit: true) { $0.count >= 10 }
        try #require(records.count == 10)
        let p0 = TopicPartition(topic, 0)
        #expect(try await awaitCommitted(source, [p0: 10]) == [p0: 10])
        try #require(try await fence(source, on: cluster, error: MockErrors.illegalGeneration))
        #expect(log.messages(at: .error).isEmpty, "\(log.messages(at: .error))")
        #expect(source.recordsToRedo == 0)
        await source.stop()
        try await source.close()
    }

    /// Lost while closing (the group keeps rebalancing as members stop): the stop exits non-zero.
    @Test func aLostAssignmentWhileClosingMakesTheStopFail() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = try singlePartitionTopic(cluster, "lost-close", records: 10)
        let group = uniqueName("g")
        let log = CapturedLog()
        var options = consumerOptions(cluster, group: group, topics: [topic])
        // Long enough for the fenced heartbeat (every second) to land while the close retries.
        options.commitTimeout = .seconds(15)
        let source = KafkaSource(options: options, logger: log.logger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)
        try cluster.pushRequestErrors(apiKey: MockErrors.offsetCommit, error: MockErrors.rebalanceInProgress, count: 100_000)
        try await source.commit(records.map(\.position))
        try cluster.pushRequestErrors(apiKey: MockErrors.heartbeat, error: MockErrors.illegalGeneration, count: 1)
        await source.stop()
        let thrown = await #expect(throws: UncommittedPositions.self) { try await source.close() }
        let p0 = TopicPartition(topic, 0)
        #expect(thrown?.positions == ["\(p0)": 10])
        #expect(thrown?.reason.contains("lost with their partitions") == true, "\(thrown?.reason ?? ""); errors: \(log.messages(at: .error))")
        let committed = try brokerCommittedOffsets(cluster, group: group, [p0])
        #expect((committed[p0] ?? -1) < 0, "committed \(committed)")
    }
}

import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

/// Every finished offset reaches the broker, whether the member then goes idle, is revoked
/// or stops: commits fail with REBALANCE_IN_PROGRESS (injected on the mock broker's
/// OffsetCommit requests) and must be sent again. The committed offsets are read by a
/// separate consumer that never joins the group, not through the source under test.
@Suite("Kafka commits retried through a rebalance", .serialized, .timeLimit(.minutes(10)))
struct KafkaCommitRetryTests {
    /// Kafka protocol API key of OffsetCommit, and the REBALANCE_IN_PROGRESS error code.
    static let offsetCommit: Int16 = 8
    static let rebalanceInProgress: Int32 = 27

    func fixture(_ name: String, records: Int = 10) throws -> (MockCluster, String, String) {
        let cluster = try MockCluster(brokers: 1)
        let topic = uniqueName(name)
        try cluster.createTopic(topic, partitions: 1)
        try kcatProduce(cluster, topic: topic, partition: 0, lines: (0..<records).map { "k\($0):v\($0)" })
        return (cluster, topic, uniqueName("g"))
    }

    /// The broker's committed offsets, polled until they equal `expected` or `timeout` passes.
    func brokerCommitted(
        _ cluster: MockCluster, group: String, _ expected: [TopicPartition: Int64], timeout: Duration = .seconds(20)
    ) async throws -> [TopicPartition: Int64] {
        let properties = [
            KafkaProperty("bootstrap.servers", cluster.bootstrapServers), KafkaProperty("group.id", group),
            KafkaProperty("broker.address.family", "v4"),
        ]
        let deadline = ContinuousClock.now + timeout
        var last: [TopicPartition: Int64] = [:]
        while ContinuousClock.now < deadline {
            last = try KafkaCommittedOffsets.read(properties: properties, partitions: Array(expected.keys), timeout: .seconds(5))
            if last == expected { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    @Test func anIdleMembersFailedCommitIsSentAgainWithoutNewRecords() async throws {
        let (cluster, topic, group) = try fixture("idle")
        defer { cluster.close() }
        let source = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)
        try cluster.pushRequestErrors(apiKey: Self.offsetCommit, error: Self.rebalanceInProgress, count: 3)
        try await source.commit(records.map(\.position))
        // Idle: the runner keeps polling, no record arrives; the commit must still get through.
        let p0 = TopicPartition(topic, 0)
        let polling = Task {
            while !Task.isCancelled { _ = try await source.nextBatch(maxRecords: 10) }
        }
        let committed = try await brokerCommitted(cluster, group: group, [p0: 10])
        polling.cancel()
        _ = await polling.result
        #expect(committed == [p0: 10])
        try await source.close()
    }

    @Test func aCleanStopWaitsOutARebalanceInProgress() async throws {
        let (cluster, topic, group) = try fixture("stop")
        defer { cluster.close() }
        let source = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)
        // The asynchronous commit and the close's first attempts fail.
        try cluster.pushRequestErrors(apiKey: Self.offsetCommit, error: Self.rebalanceInProgress, count: 4)
        try await source.commit(records.map(\.position))
        await source.stop()
        try await source.close()
        let p0 = TopicPartition(topic, 0)
        #expect(try await brokerCommitted(cluster, group: group, [p0: 10], timeout: .seconds(5)) == [p0: 10])
    }

    @Test func aStopThatCannotCommitSaysWhatIsLeftAndDoesNotLookClean() async throws {
        let (cluster, topic, group) = try fixture("stuck")
        defer { cluster.close() }
        var options = consumerOptions(cluster, group: group, topics: [topic])
        options.commitTimeout = .seconds(2)
        let source = KafkaSource(options: options, logger: testLogger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 10 }
        try #require(records.count == 10)
        try cluster.pushRequestErrors(apiKey: Self.offsetCommit, error: Self.rebalanceInProgress, count: 1000)
        try await source.commit(records.map(\.position))
        await source.stop()
        let error = await #expect(throws: UncommittedPositions.self) { try await source.close() }
        #expect(error?.positions == ["\(topic)[0]": 10])
        #expect(error?.description.contains("REBALANCE_IN_PROGRESS") == true)
    }

    /// The mock broker refuses every commit while its group rebalances, so the revoke's own
    /// commit cannot pass: the partition that comes straight back gets its finished offset
    /// committed once the group settled, the other one's new owner reads it again (no loss).
    @Test func aRevokeThatCannotCommitSendsThePointAgainWhenThePartitionComesBack() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("revoke")
        try cluster.createTopic(topic, partitions: 2)
        for partition in Int32(0)..<2 {
            try kcatProduce(cluster, topic: topic, partition: partition, lines: (0..<10).map { "k\($0):\(partition)-\($0)" })
        }
        let group = uniqueName("g")
        let first = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await first.open()
        let records = try await drain(first, commit: false) { $0.count >= 20 }
        try #require(records.count == 20)
        // The asynchronous commit fails and keeps failing until the revoke.
        try cluster.pushRequestErrors(apiKey: Self.offsetCommit, error: Self.rebalanceInProgress, count: 1000)
        try await first.commit(records.map(\.position))
        let second = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await second.open()
        // Poll both until each owns one partition, then let commits through.
        let deadline = ContinuousClock.now + .seconds(60)
        var reread: [Record] = []
        while ContinuousClock.now < deadline, first.assignment.count != 1 || second.assignment.count != 1 {
            _ = try await first.nextBatch(maxRecords: 10)
            reread += try await second.nextBatch(maxRecords: 10) ?? []
        }
        try #require(first.assignment.count == 1 && second.assignment.count == 1)
        try cluster.clearRequestErrors(apiKey: Self.offsetCommit)
        let kept = try #require(first.assignment.first)
        let moved = try #require(second.assignment.first)
        let polling = Task {
            while !Task.isCancelled { _ = try await first.nextBatch(maxRecords: 10) }
        }
        let committed = try await brokerCommitted(cluster, group: group, [kept: 10], timeout: .seconds(30))
        polling.cancel()
        _ = await polling.result
        #expect(committed == [kept: 10], "the partition that came back has its finished offset committed")
        // The moved partition's new owner starts where the last commit left it: all 10 again.
        reread += try await drain(second, commit: false) { got in (reread + got).filter { $0.topicPartition == moved }.count >= 10 }
        #expect(Set(reread.filter { $0.topicPartition == moved }.map(\.position.offset)) == Set((0..<10).map(Int64.init)))
        await first.stop()
        await second.stop()
        try? await first.close()
        try? await second.close()
    }
}

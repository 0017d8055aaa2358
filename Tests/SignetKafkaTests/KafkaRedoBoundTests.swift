import Foundation
import Logging
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

/// While the coordinator refuses a partition's commits, the member stops fetching it once
/// `maxUncommittedPerPartition` of its records are finished but uncommitted, so a partition
/// lost after a long refusal leaves at most that much work to redo; it resumes once a commit
/// passes. The pause must survive the keep-alive's resume (a stalled runner). What a new
/// owner would re-read is measured against the broker's committed offset, read by a separate
/// consumer that never joins the group.
@Suite("Kafka work redone after refused commits is bounded", .serialized, .timeLimit(.minutes(10)))
struct KafkaRedoBoundTests {
    /// The broker's committed offset of `partition` (negative: none).
    static func committed(_ cluster: MockCluster, group: String, _ partition: TopicPartition) throws -> Int64 {
        try brokerCommittedOffsets(cluster, group: group, [partition])[partition] ?? -1
    }

    @Test func aPartitionWhoseCommitsAreRefusedStopsFetchingAtTheBound() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = try singlePartitionTopic(cluster, "bound", records: 10)
        let group = uniqueName("g")
        let limit = 30, batch = 10, total = 300
        var options = consumerOptions(cluster, group: group, topics: [topic])
        options.maxUncommittedPerPartition = limit
        let log = CapturedLog()
        let source = KafkaSource(options: options, logger: log.logger)
        try await source.open()
        let p0 = TopicPartition(topic, 0)
        var received = try await drain(source, commit: false, maxRecords: batch) { $0.count >= 10 }
        try #require(received.count == 10)

        // The coordinator refuses commits from now on; the first one's refusal arrives.
        try cluster.pushRequestErrors(apiKey: MockErrors.offsetCommit, error: MockErrors.rebalanceInProgress, count: 100_000)
        try await source.commit(received.map(\.position))
        _ = try await drain(source, commit: false, timeout: .milliseconds(500), maxRecords: batch) { _ in false }
        try kcatProduce(cluster, topic: topic, partition: 0, lines: (10..<total).map { "k\($0):v\($0)" })

        // The runner keeps finishing what it gets, for longer than all of it takes to arrive.
        received += try await drain(source, commit: true, timeout: .seconds(3), maxRecords: batch) { _ in false }
        func reach() -> Int64 { (received.map(\.position.offset).max() ?? -1) + 1 }
        #expect(source.heldPartitions == [p0])
        #expect(reach() <= Int64(limit + batch), "fetched up to \(reach()) with commits refused (bound \(limit))")
        #expect(log.messages(at: .warning).contains { $0.contains("commits of \(p0)") && $0.contains("are refused") })

        // The runner stalls (the keep-alive pauses and later resumes every partition): still held.
        try await Task.sleep(for: KafkaSource.keepAliveAfter * 2.5)
        received += try await drain(source, commit: true, timeout: .seconds(2), maxRecords: batch) { _ in false }
        #expect(source.heldPartitions == [p0])
        #expect(reach() <= Int64(limit + batch), "the keep-alive's resume fetched the held partition again, up to \(reach())")

        // What a new owner would read again if the partition were lost now: from the broker's offset.
        let start = max(0, try Self.committed(cluster, group: group, p0))
        #expect(reach() - start <= Int64(limit + batch), "committed \(start), fetched up to \(reach())")

        // Commits pass again: the retry is acknowledged, the partition resumes and everything arrives.
        try cluster.clearRequestErrors(apiKey: MockErrors.offsetCommit)
        received += try await drain(source, commit: true, timeout: .seconds(60), maxRecords: batch) { got in
            got.contains { $0.position.offset == Int64(total - 1) }
        }
        #expect(reach() == Int64(total))
        #expect(source.heldPartitions.isEmpty)
        let deadline = ContinuousClock.now + .seconds(30)
        var last = try Self.committed(cluster, group: group, p0)
        while last != Int64(total), ContinuousClock.now < deadline {
            _ = try await source.nextBatch(maxRecords: batch)
            last = try Self.committed(cluster, group: group, p0)
        }
        #expect(last == Int64(total))
        await source.stop()
        try await source.close()
    }
}

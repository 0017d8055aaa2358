import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

/// Records a partition's next owner re-reads after one refused-then-lost round, for
/// docs/kafka.md: a member finishes records for 3 s while the coordinator refuses every
/// commit (4 partitions with a backlog of 3,000 records each), then is fenced (Heartbeat
/// answered ILLEGAL_GENERATION). Run with `SIGNET_KAFKA_MEASURE=1`; `Int.max` is the
/// behaviour before the bound existed. The re-read count is what the member fetched past the
/// broker's committed offset (read by a consumer outside the group).
@Suite("Kafka work redone per lost round (measurement)", .serialized, .timeLimit(.minutes(10)))
struct KafkaRedoMeasurement {
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["SIGNET_KAFKA_MEASURE"] != nil, "set SIGNET_KAFKA_MEASURE=1"),
        arguments: [Int.max, KafkaSource.Options.defaultMaxUncommittedPerPartition, 100])
    func recordsReReadAfterARefusedThenLostRound(limit: Int) async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("measure")
        let partitions: Int32 = 4, backlog = 3000, batch = 96
        try cluster.createTopic(topic, partitions: Int(partitions))
        for partition in 0..<partitions {
            try kcatProduce(cluster, topic: topic, partition: partition, lines: (0..<backlog).map { "k\($0):\(partition)-\($0)" })
        }
        let group = uniqueName("g")
        var options = consumerOptions(cluster, group: group, topics: [topic])
        options.maxUncommittedPerPartition = limit
        let source = KafkaSource(options: options, logger: testLogger)
        try cluster.pushRequestErrors(apiKey: MockErrors.offsetCommit, error: MockErrors.rebalanceInProgress, count: 100_000)
        try await source.open()
        var reach: [TopicPartition: Int64] = [:]
        func note(_ records: [Record]) {
            for record in records { reach[record.topicPartition] = max(reach[record.topicPartition] ?? 0, record.position.offset + 1) }
        }
        // Joining takes about 3 s; the refused window starts with the first records.
        note(try await drain(source, commit: true, timeout: .seconds(60), maxRecords: batch) { !$0.isEmpty })
        note(try await drain(source, commit: true, timeout: .seconds(3), maxRecords: batch) { _ in false })
        let fetched = reach.values.reduce(0, +)
        try #require(try await fence(source, on: cluster, error: MockErrors.illegalGeneration, rejoined: false, maxRecords: batch))
        let all = (0..<partitions).map { TopicPartition(topic, $0) }
        let committed = try brokerCommittedOffsets(cluster, group: group, all)
        let reread = all.map { (reach[$0] ?? 0) - max(0, committed[$0] ?? 0) }
        print(
            "redo measurement: max_uncommitted_per_partition \(limit == .max ? "unbounded" : String(limit)): fetched \(fetched) in the refused window; re-read by the next owner \(reread.reduce(0, +)) (per partition \(reread)); counted as lost \(source.recordsToRedo)")
        await source.stop()
        try? cluster.clearRequestErrors(apiKey: MockErrors.offsetCommit)
        try? await source.close()
    }
}

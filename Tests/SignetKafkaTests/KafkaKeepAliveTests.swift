import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

@Suite("Kafka source while the pipeline is stalled")
struct KafkaKeepAliveTests {
    /// A runner that stops asking for records (its handoff full behind a slow sink) for longer
    /// than `max.poll.interval.ms` must not cost the member its partitions: librdkafka would
    /// leave the group and the next ask would rebalance (every record in flight read again by
    /// whoever gets the partition). The source polls for the stalled runner, with the
    /// partitions paused, so the member stays, and when the runner asks again every record
    /// comes, in order, exactly once, those produced during the stall included.
    @Test func stalledRunnerKeepsItsPartitionsAndLosesNothing() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("stall")
        let partitions: Int32 = 2, half = 20
        try cluster.createTopic(topic, partitions: Int(partitions))
        func produce(_ range: Range<Int>) throws {
            for partition in 0..<partitions {
                try kcatProduce(cluster, topic: topic, partition: partition, lines: range.map { "key:\(partition)-\($0)" })  // key:value
            }
        }
        try produce(0..<half)
        // The shortest poll interval librdkafka accepts with the mock's 6 s session.
        let options = consumerOptions(
            cluster, group: uniqueName("g"), topics: [topic], extra: [KafkaProperty("max.poll.interval.ms", "6000")])
        let source = KafkaSource(options: options, logger: testLogger)
        try await source.open()

        var received = try await drain(source, commit: true, timeout: .seconds(90)) { $0.count >= Int(partitions) * half }
        try #require(received.count == Int(partitions) * half)
        let rebalancesBefore = source.rebalances
        let assignmentBefore = source.assignment

        // The stall: more records arrive; the runner asks for nothing for longer than the poll interval.
        try produce(half..<2 * half)
        try await Task.sleep(for: .seconds(9))

        received += try await drain(source, commit: true, timeout: .seconds(60)) { $0.count >= Int(partitions) * half }
        #expect(source.rebalances == rebalancesBefore, "the member left its group during the stall and rejoined")
        #expect(source.assignment == assignmentBefore)
        for partition in 0..<partitions {
            let texts = received.filter { $0.position.partition == partition }.map(\.text)
            #expect(texts == (0..<2 * half).map { "\(partition)-\($0)" }, "partition \(partition): a record lost, repeated or out of order")
        }
        let complete = Dictionary(uniqueKeysWithValues: (0..<partitions).map { (TopicPartition(topic, $0), Int64(2 * half)) })
        #expect(try await awaitCommitted(source, complete) == complete)
        try await source.close()
    }
}

import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

@Suite("Kafka source rebalances")
struct KafkaRebalanceTests {
    /// A reads every partition and keeps all its records in flight (as a runner stuck on
    /// a slow sink would) while B joins mid-stream and acknowledges at once. After the
    /// rebalance, A acknowledges its backlog in hand-out order (the runner's order):
    /// - acknowledgements of records handed out before their partition was revoked are
    ///   ignored: they must not move B's committed offsets (back) for partitions B owns;
    /// - every message is handed out, and every partition ends fully committed.
    @Test(arguments: ["range", "cooperative-sticky"])
    func secondMemberJoinsMidStream(strategy: String) async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("rebalance")
        let partitions = Int32(4), perPartition = 40
        try cluster.createTopic(topic, partitions: Int(partitions))
        func produce(_ range: Range<Int>) throws {
            for partition in 0..<partitions {
                try kcatProduce(cluster, topic: topic, partition: partition, lines: range.map { "k:\(partition)-\($0)" })
            }
        }
        try produce(0..<perPartition / 2)
        let all = Set((0..<partitions).map { TopicPartition(topic, $0) })

        let group = uniqueName("g")
        let extra = [KafkaProperty("partition.assignment.strategy", strategy)]
        let a = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic], extra: extra), logger: testLogger)
        let b = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic], extra: extra), logger: testLogger)
        try await a.open()

        var seen: Set<SourcePosition> = []
        var backlogA: [Record] = []
        func stepA() async throws {
            guard let batch = try await a.nextBatch(maxRecords: 10) else { return }
            seen.formUnion(batch.map(\.position))
            backlogA += batch
        }
        func stepB() async throws {
            guard let batch = try await b.nextBatch(maxRecords: 10), !batch.isEmpty else { return }
            seen.formUnion(batch.map(\.position))
            try await b.commit(batch.map(\.position))
        }

        // Phase 1: A alone reads the first half of every partition, acknowledging nothing.
        // The bound only stops a hang: under the full parallel suite (with PostgreSQL) the
        // join alone has taken over 40 s.
        var deadline = ContinuousClock.now + .seconds(120)
        while seen.count < Int(partitions) * perPartition / 2, ContinuousClock.now < deadline { try await stepA() }
        try #require(seen.count == Int(partitions) * perPartition / 2)

        // Phase 2: B joins; the second half is produced while the group rebalances.
        try await b.open()
        try produce(perPartition / 2..<perPartition)
        func settled() -> Bool {
            let ownedByA = a.assignment, ownedByB = b.assignment
            return !ownedByA.isEmpty && !ownedByB.isEmpty && ownedByA.isDisjoint(with: ownedByB)
                && ownedByA.union(ownedByB) == all && seen.count == Int(partitions) * perPartition
        }
        deadline = ContinuousClock.now + .seconds(120)
        while !settled(), ContinuousClock.now < deadline {
            try await stepA()
            try await stepB()
        }
        try #require(settled(), "A owns \(a.assignment), B owns \(b.assignment), \(seen.count) seen")
        for partition in 0..<partitions {
            let offsets = Set(seen.filter { $0.partition == partition }.map(\.offset))
            #expect(offsets == Set((0..<Int64(perPartition))), "partition \(partition): not every message handed out")
        }
        let ownedByB = b.assignment
        let completeB = Dictionary(uniqueKeysWithValues: ownedByB.map { ($0, Int64(perPartition)) })
        deadline = ContinuousClock.now + .seconds(60)
        while try await b.committedOffsets(Array(ownedByB)) != completeB, ContinuousClock.now < deadline { try await stepB() }
        #expect(try await b.committedOffsets(Array(ownedByB)) == completeB)

        // A's partitions cannot be committed yet: A acknowledged nothing.
        for (partition, offset) in try await a.committedOffsets(Array(a.assignment)) {
            #expect(offset < 0 || offset <= Int64(perPartition / 2), "\(partition) committed \(offset) before A acknowledged")
        }

        // Phase 3: A acknowledges its backlog in order, batch-sized like the runner.
        for start in stride(from: 0, to: backlogA.count, by: 10) {
            try await a.commit(backlogA[start..<min(start + 10, backlogA.count)].map(\.position))
        }
        // The old-epoch records of partitions that moved to B were all ignored.
        let lostByA = backlogA.filter { ownedByB.contains($0.topicPartition) }
        #expect(!lostByA.isEmpty)
        #expect(a.ignoredLateCommits >= lostByA.count)

        try await Task.sleep(for: .milliseconds(300))
        #expect(try await b.committedOffsets(Array(ownedByB)) == completeB, "a late acknowledgement moved B's offsets")

        // Phase 4: both keep running (A now acknowledging at once) until A has re-read
        // what it had read in the old epoch; everything ends committed.
        let complete = Dictionary(uniqueKeysWithValues: all.map { ($0, Int64(perPartition)) })
        deadline = ContinuousClock.now + .seconds(60)
        var committed: [TopicPartition: Int64] = [:]
        while ContinuousClock.now < deadline {
            if let batch = try await a.nextBatch(maxRecords: 10), !batch.isEmpty {
                try await a.commit(batch.map(\.position))
            }
            try await stepB()
            committed = try await b.committedOffsets(Array(all))
            if committed == complete { break }
        }
        #expect(committed == complete)
        await a.stop()
        await b.stop()
        try await a.close()
        try await b.close()
    }
}

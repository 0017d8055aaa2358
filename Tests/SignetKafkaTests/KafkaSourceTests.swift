import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

@Suite("Kafka source on the mock broker")
struct KafkaSourceTests {
    @Test func mockClusterIsLoopbackOnly() throws {
        let cluster = try MockCluster(brokers: 3)
        defer { cluster.close() }
        let hosts = cluster.bootstrapServers.split(separator: ",")
        #expect(hosts.count == 3)
        for host in hosts { #expect(host.hasPrefix("127.0.0.1:")) }
        // Listening sockets of this process: none on a wildcard address for these ports.
        let ports = Set(hosts.compactMap { $0.split(separator: ":").last.flatMap { Int($0) } })
        let table = try String(contentsOfFile: "/proc/net/tcp", encoding: .utf8).split(separator: "\n").dropFirst()
        var seen = 0
        for line in table {
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[3] == "0A" else { continue }  // LISTEN
            let local = fields[1].split(separator: ":")
            guard let port = Int(local[1], radix: 16), ports.contains(port) else { continue }
            #expect(local[0] == "0100007F", "port \(port) listens on \(local[0])")
            seen += 1
        }
        #expect(seen == 3)
    }

    @Test func steadyStreamArrivesInOrderPerPartition() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("steady")
        try cluster.createTopic(topic, partitions: 3)
        let producedFrom = Int64(Date().timeIntervalSince1970 * 1000)
        for partition in Int32(0)..<3 {
            try kcatProduce(cluster, topic: topic, partition: partition, lines: (0..<100).map { "k\($0):p\(partition)-\($0)" })
        }
        let producedUntil = Int64(Date().timeIntervalSince1970 * 1000)
        let source = KafkaSource(options: consumerOptions(cluster, group: uniqueName("g"), topics: [topic]), logger: testLogger)
        try await source.open()
        let records = try await drain(source, commit: true) { $0.count >= 300 }
        #expect(records.count == 300)
        // Each record carries its message's timestamp (kcat's produce time), for the runner's latency.
        #expect(records.allSatisfy { ($0.sourceTimestamp ?? 0) >= producedFrom - 1 && ($0.sourceTimestamp ?? .max) <= producedUntil + 1 })
        for partition in Int32(0)..<3 {
            let mine = records.filter { $0.position.partition == partition }
            #expect(mine.map(\.position.offset) == (0..<100).map(Int64.init))
            #expect(mine.map(\.text) == (0..<100).map { "p\(partition)-\($0)" })
        }
        let expected = Dictionary(uniqueKeysWithValues: (Int32(0)..<3).map { (TopicPartition(topic, $0), Int64(100)) })
        #expect(try await awaitCommitted(source, expected) == expected)
        await source.stop()
        #expect(try await source.nextBatch(maxRecords: 10) == nil)
        try await source.close()
    }

    @Test func commitsOnlyTheContiguousHighWaterMark() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("contiguous")
        try cluster.createTopic(topic, partitions: 1)
        try kcatProduce(cluster, topic: topic, partition: 0, lines: (0..<4).map { "k:\($0)" })
        let source = KafkaSource(options: consumerOptions(cluster, group: uniqueName("g"), topics: [topic]), logger: testLogger)
        try await source.open()
        let records = try await drain(source, commit: false) { $0.count >= 4 }
        try #require(records.map(\.position.offset) == [0, 1, 2, 3])
        let p0 = TopicPartition(topic, 0)
        try await source.commit([records[0].position, records[1].position, records[3].position])
        #expect(try await awaitCommitted(source, [p0: 2]) == [p0: 2])
        // Give a wrong commit (3 without 2) time to show up if it were sent.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await source.committedOffsets([p0]) == [p0: 2])
        try await source.commit([records[2].position])
        #expect(try await awaitCommitted(source, [p0: 4]) == [p0: 4])
        try await source.close()
    }

    @Test func newMemberResumesFromCommittedOffsetsAfterClose() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("resume")
        try cluster.createTopic(topic, partitions: 2)
        for partition in Int32(0)..<2 {
            try kcatProduce(cluster, topic: topic, partition: partition, lines: (0..<150).map { "k\($0):\(partition)-\($0)" })
        }
        let group = uniqueName("g")
        let first = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await first.open()
        // Read part of the stream; commit all but the last batch (still "in flight" at close).
        var committed: [Record] = []
        var inFlight: [Record] = []
        // Generous: on a loaded machine the group join alone can take many seconds.
        let deadline = ContinuousClock.now + .seconds(60)
        while committed.count < 100, ContinuousClock.now < deadline {
            let batch = try await first.nextBatch(maxRecords: 20) ?? []
            guard !batch.isEmpty else { continue }
            if !inFlight.isEmpty { try await first.commit(inFlight.map(\.position)) }
            committed += inFlight
            inFlight = batch
        }
        #expect(committed.count >= 100)
        await first.stop()
        try await first.close()

        let second = KafkaSource(options: consumerOptions(cluster, group: group, topics: [topic]), logger: testLogger)
        try await second.open()
        let rest = try await drain(second, commit: true) { records in
            Set(records.map(\.text)).union(committed.map(\.text)).count >= 300
        }
        try await second.close()
        for partition in Int32(0)..<2 {
            let before = committed.filter { $0.position.partition == partition }.map(\.position.offset)
            let after = rest.filter { $0.position.partition == partition }.map(\.position.offset)
            // No loss and no gap: the new member starts exactly at the committed offset,
            // which re-delivers the in-flight batch.
            let resumeAt = (before.max() ?? -1) + 1
            #expect(after.first == resumeAt, "partition \(partition) resumed at \(after.first ?? -1), expected \(resumeAt)")
            #expect(Set(before + after) == Set((0..<150).map(Int64.init)))
            #expect(after == after.sorted())
        }
    }
}

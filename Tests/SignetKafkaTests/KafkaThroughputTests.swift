import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

@Suite("Kafka source + sink throughput on the mock")
struct KafkaThroughputTests {
    /// Consumes a topic and republishes every record through the sink, committing each
    /// batch only after the sink acked it (what the runner does). Prints messages/s.
    @Test func sourceToSinkPassThrough() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let input = uniqueName("in"), output = uniqueName("out")
        try cluster.createTopic(input, partitions: 4)
        try cluster.createTopic(output, partitions: 4)
        let count = 20_000
        let payload = String(repeating: "x", count: 200)

        // Fill the input with our own producer, in batches (each ~5 MB partition cap is far away).
        let feeder = KafkaSink(options: sinkOptions(cluster, topic: input), logger: testLogger)
        try await feeder.open()
        for start in stride(from: 0, to: count, by: 1000) {
            try await feeder.write((start..<start + 1000).map {
                OutputMessage(key: Array("otid-\($0 % 97)".utf8), value: Array("\($0):\(payload)".utf8))
            })
        }
        try await feeder.close()

        let source = KafkaSource(options: consumerOptions(cluster, group: uniqueName("g"), topics: [input]), logger: testLogger)
        let sink = KafkaSink(options: sinkOptions(cluster, topic: output), logger: testLogger)
        try await source.open()
        try await sink.open()
        var moved = 0
        var started: ContinuousClock.Instant?
        let deadline = ContinuousClock.now + .seconds(60)
        while moved < count, ContinuousClock.now < deadline {
            guard let batch = try await source.nextBatch(maxRecords: 500), !batch.isEmpty else { continue }
            if started == nil { started = .now }  // exclude the group join
            try await sink.write(batch.map { OutputMessage(value: $0.raw, headers: [.init("src", $0.position.description)]) })
            try await source.commit(batch.map(\.position))
            moved += batch.count
        }
        let elapsed = (ContinuousClock.now - (started ?? .now)).seconds
        print("kafka pass-through: \(moved) messages in \(String(format: "%.2f", elapsed)) s = \(Int(Double(moved) / max(elapsed, 0.001))) msg/s")
        #expect(moved == count)
        try await source.close()
        try await sink.close()
    }
}

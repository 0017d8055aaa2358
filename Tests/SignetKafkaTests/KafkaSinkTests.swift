import CRdKafka
import Foundation
import SignetCore
import SignetTestSupport
import Testing

@testable import SignetKafka

@Suite("Kafka sink on the mock broker")
struct KafkaSinkTests {
    @Test func deliversKeysValuesAndHeaders() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("out")
        try cluster.createTopic(topic, partitions: 1)
        let sink = KafkaSink(options: sinkOptions(cluster, topic: topic), logger: testLogger)
        try await sink.open()
        try await sink.write([
            OutputMessage(key: Array("otid-1".utf8), value: Array("first".utf8), headers: [.init("event-type", "RENEWAL")]),
            OutputMessage(value: Array("second".utf8), headers: [.init("signet-reason", "bad_signature"), .init("signet-detail", "x5c")]),
            OutputMessage(key: Array("otid-2".utf8), value: Array("third".utf8)),
        ])
        try await sink.close()
        let lines = try kcatReadAll(cluster, topic: topic)
        #expect(lines == [
            "0|otid-1|first|event-type=RENEWAL",
            "0||second|signet-reason=bad_signature,signet-detail=x5c",
            "0|otid-2|third|",
        ])
    }

    @Test func writeFailsWhileTheBrokerIsDownAndSucceedsLater() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("outage")
        try cluster.createTopic(topic, partitions: 1)
        let sink = KafkaSink(
            options: sinkOptions(cluster, topic: topic, extra: [
                KafkaProperty("message.timeout.ms", "1500"),
                // Reconnect quickly once the broker is back (the default backs off up to 10 s).
                KafkaProperty("reconnect.backoff.max.ms", "200"),
            ]),
            logger: testLogger)
        try await sink.open()
        try await sink.write([OutputMessage(value: Array("before".utf8))])

        try cluster.setBrokerDown(1)
        let started = ContinuousClock.now
        let failure = await #expect(throws: KafkaError.self) {
            try await sink.write([OutputMessage(value: Array("during".utf8))])
        }
        // It fails because message.timeout.ms (1.5 s) expired — not by hanging until some
        // other limit. (The wall-clock guard is loose: in the full parallel suite, other tests'
        // blocking waits delay when this task resumes.)
        #expect(failure?.code == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT.rawValue, "\(String(describing: failure))")
        #expect(ContinuousClock.now - started < .seconds(60))

        try cluster.setBrokerUp(1)
        // As the runner does: retry until the sink recovers (bounded).
        var attempts = 0
        while true {
            attempts += 1
            do {
                try await sink.write([OutputMessage(value: Array("after".utf8))])
                break
            } catch {
                #expect(attempts < 10, "sink did not recover: \(error)")
                if attempts >= 10 { break }
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        try await sink.close()
        let values = try kcatReadAll(cluster, topic: topic).map { $0.split(separator: "|", omittingEmptySubsequences: false)[2] }
        #expect(values.first == "before")
        #expect(values.last == "after")
    }

    @Test func writeToAMissingTopicFailsUntilItExists() async throws {
        let cluster = try MockCluster(brokers: 1)
        defer { cluster.close() }
        let topic = uniqueName("missing")
        // The mock auto-creates any topic a client asks about, so "missing" is emulated:
        // metadata for it answers UNKNOWN_TOPIC_OR_PARTITION until cleared.
        try cluster.createTopic(topic, partitions: 1)
        try cluster.setTopicError(topic, error: 3)
        let sink = KafkaSink(
            options: sinkOptions(cluster, topic: topic, extra: [
                KafkaProperty("message.timeout.ms", "1500"),
                KafkaProperty("topic.metadata.refresh.interval.ms", "200"),
            ]),
            logger: testLogger)
        try await sink.open()
        await #expect(throws: KafkaError.self) {
            try await sink.write([OutputMessage(value: Array("lost".utf8))])
        }
        try cluster.setTopicError(topic, error: 0)
        var delivered = false
        for _ in 0..<10 where !delivered {
            do {
                try await sink.write([OutputMessage(key: Array("k".utf8), value: Array("kept".utf8))])
                delivered = true
            } catch {
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        #expect(delivered)
        try await sink.close()
        #expect(try kcatReadAll(cluster, topic: topic) == ["0|k|kept|"])
    }
}

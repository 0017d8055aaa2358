import CRdKafka
import CoreMetrics
import Synchronization

/// `signet_kafka_consumer_lag{topic,partition}`: messages between the last one handed to
/// the pipeline and the partition's high watermark, from librdkafka's cached watermarks
/// (no broker round trip), updated on every poll that returned messages.
final class KafkaLagMetrics: Sendable {
    private let gauges = Mutex([TopicPartition: Gauge]())

    /// Records the lag of each partition given the last offset polled from it.
    func update(handle: OpaquePointer, lastOffsets: [TopicPartition: Int64]) {
        for (partition, offset) in lastOffsets {
            var low: Int64 = 0
            var high: Int64 = 0
            let error = rd_kafka_get_watermark_offsets(handle, partition.topic, partition.partition, &low, &high)
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { continue }
            gauge(for: partition).record(max(0, high &- offset &- 1))
        }
    }

    private func gauge(for partition: TopicPartition) -> Gauge {
        gauges.withLock { table in
            if let existing = table[partition] { return existing }
            let made = Gauge(
                label: "signet_kafka_consumer_lag",
                dimensions: [("topic", partition.topic), ("partition", String(partition.partition))])
            table[partition] = made
            return made
        }
    }
}

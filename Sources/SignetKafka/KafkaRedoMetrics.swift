import CoreMetrics
import Synchronization

/// `signet_kafka_records_to_redo_total{topic,partition}`: finished records whose offsets were
/// never committed because their partition was lost (session timeout, fenced member), so
/// whoever owns the partition next processes them again. A stop reports them too (exit 1);
/// during a long run this counter is how they show.
final class KafkaRedoMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex([TopicPartition: Counter]())

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Adds each partition's records to its counter.
    func add(_ records: [TopicPartition: Int]) {
        for (partition, count) in records where count > 0 {
            counter(for: partition).increment(by: count)
        }
    }

    private func counter(for partition: TopicPartition) -> Counter {
        counters.withLock { table in
            if let existing = table[partition] { return existing }
            let made = Counter(
                label: "signet_kafka_records_to_redo_total",
                dimensions: [("topic", partition.topic), ("partition", String(partition.partition))], factory: factory)
            table[partition] = made
            return made
        }
    }
}

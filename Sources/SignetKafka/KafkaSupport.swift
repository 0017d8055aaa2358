import CRdKafka
import Dispatch
import SignetCore

/// Owns an `rd_kafka_topic_partition_list_t` (destroyed in deinit).
///
/// Use the pointer only inside ``withList(_:)``: Swift may end an object's lifetime
/// right after its last use, so `PartitionList(...).raw` passed to a C call could be
/// freed before librdkafka reads it.
final class PartitionList {
    private let raw: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    /// A list of partitions with offsets (for commits); `RD_KAFKA_OFFSET_INVALID` when nil.
    init(_ entries: [(TopicPartition, Int64?)]) {
        raw = rd_kafka_topic_partition_list_new(Int32(max(entries.count, 1)))
        for (partition, offset) in entries {
            let element = rd_kafka_topic_partition_list_add(raw, partition.topic, partition.partition)
            element?.pointee.offset = offset ?? Int64(RD_KAFKA_OFFSET_INVALID)
        }
    }

    convenience init(offsets: [TopicPartition: Int64]) {
        self.init(offsets.sorted { ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition) }.map { ($0.key, $0.value) })
    }

    /// Topics to subscribe to (partition unassigned).
    convenience init(topics: [String]) {
        self.init(topics.map { (TopicPartition($0, RD_KAFKA_PARTITION_UA), nil) })
    }

    deinit { rd_kafka_topic_partition_list_destroy(raw) }

    /// Runs `body` with the list, keeping it alive until `body` returns.
    func withList<T>(_ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(raw) }
    }

    /// The partitions (and offsets) of a list librdkafka owns, copied out.
    static func entries(of list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?) -> [(TopicPartition, Int64, rd_kafka_resp_err_t)] {
        guard let list, let elements = list.pointee.elems else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = elements[index]
            return (TopicPartition(String(cString: element.topic), element.partition), element.offset, element.err)
        }
    }
}

/// Milliseconds for librdkafka timeouts, clamped to Int32.
func milliseconds(_ duration: Duration) -> Int32 {
    Int32(clamping: max(0, duration.clampedMilliseconds))
}

import CRdKafka

/// Reads a group's committed offsets through a consumer of its own that never joins the
/// group (no subscribe, so no rebalance): what a restarted member would resume from, as
/// the broker says, independent of any running member's bookkeeping. For tests and tools.
enum KafkaCommittedOffsets {
    /// Blocking. `properties` need `bootstrap.servers` and `group.id`; partitions without a
    /// commit are negative (`OFFSET_INVALID`).
    static func read(
        properties: [KafkaProperty], partitions: [TopicPartition], timeout: Duration
    ) throws -> [TopicPartition: Int64] {
        let conf = KafkaConf()
        try conf.set(properties)
        let handle = try makeKafkaHandle(RD_KAFKA_CONSUMER, conf: conf, what: "Kafka offsets reader")
        defer { rd_kafka_destroy(handle) }
        return try PartitionList(partitions.map { ($0, nil) }).withList { list in
            let result = rd_kafka_committed(handle, list, milliseconds(timeout))
            guard result == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError("cannot read committed offsets", error: result) }
            var offsets: [TopicPartition: Int64] = [:]
            for (partition, offset, _) in PartitionList.entries(of: list) { offsets[partition] = offset }
            return offsets
        }
    }
}

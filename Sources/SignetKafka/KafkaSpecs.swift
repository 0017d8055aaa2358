package import SignetCore

extension ComponentSpec {
    static let kafkaPropertiesField = ConfigField(
        "properties", .stringMap, .optional,
        "any librdkafka setting, verbatim (checked with rd_kafka_conf_set when the pipeline is loaded)",
        example: "{ session.timeout.ms: \"45000\" }")

    /// `source: {type: kafka}`.
    package static let kafkaSource = ComponentSpec(
        name: "kafka",
        summary: "consumer-group member reading topics; commits offsets only after every sink acked",
        description: "Manual commits of the contiguous high-water mark per partition (docs/kafka.md).",
        fields: [
            ConfigField("brokers", .string, .required, "bootstrap.servers", example: "127.0.0.1:9092"),
            ConfigField("group", .string, .required, "group.id: members of one group share the partitions", example: "signet"),
            ConfigField("topics", .stringList(allowed: nil), .required, "the topics to read; a list or a comma-separated string", example: "appstore-notifications"),
        ] + KafkaSource.Options.configuration.fields + [kafkaPropertiesField],
        examples: ["source:\n  type: kafka\n  brokers: 127.0.0.1:9092\n  group: signet\n  topics: [appstore-notifications]"])

    /// The sink's own `message.timeout.ms` default, as a duration.
    static let defaultDeliveryTimeout: ConfigField.Requirement = {
        let milliseconds = KafkaSink.defaultProperties.first { $0.name == "message.timeout.ms" }.flatMap { Int64($0.value) }
        return milliseconds.map { .default(ConfigDuration.format(.milliseconds($0))) } ?? .optional
    }()

    /// `type: kafka` (a sink or the dead-letter sink).
    package static let kafkaSink = ComponentSpec(
        name: "kafka",
        summary: "idempotent producer (acks=all) to one topic; key and headers from the message",
        description: "Acknowledged when every delivery report succeeded.",
        fields: [
            ConfigField("brokers", .string, .required, "bootstrap.servers", example: "127.0.0.1:9092"),
            ConfigField("topic", .string, .required, "the topic written to", example: "entitlement-events"),
            ConfigField(
                "delivery_timeout", .duration(.milliseconds(1)...(.seconds(3600))), defaultDeliveryTimeout,
                "message.timeout.ms: how long one write may wait for acks before it fails and the runner retries"),
            kafkaPropertiesField,
        ],
        examples: ["sinks:\n  events:\n    type: kafka\n    brokers: 127.0.0.1:9092\n    topic: entitlement-events"])
}

extension KafkaSource.Options {
    /// The source's keys that set an option, their defaults the options' own; brokers, group,
    /// topics and properties become librdkafka properties and topics, read apart.
    package static let configuration = ConfigBindings<KafkaSource.Options>(defaults: KafkaSource.Options(properties: [], topics: []), [
        ConfigBinding(
            "poll_timeout", \.pollTimeout, .duration(.milliseconds(1)...(.seconds(10))),
            "how long one poll waits for the first message", advanced: true),
        ConfigBinding(
            "commit_timeout", \.commitTimeout, .duration(.milliseconds(100)...(.seconds(600))),
            "how long a clean stop keeps committing finished offsets through a rebalance or a coordinator move (keep it below settings.shutdown_timeout); what stays uncommitted is logged, listed in --summary-json and exits 1",
            advanced: true),
        ConfigBinding(
            "max_uncommitted_per_partition", \.maxUncommittedPerPartition, .int(1...10_000_000),
            "while the group coordinator refuses a partition's commits, how many of its records may be finished but uncommitted before it stops fetching that partition (resumed when a commit passes or the partition moves); bounds what a lost partition leaves to redo",
            advanced: true),
    ])
}

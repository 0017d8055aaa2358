public import SignetCore

/// Registers the Kafka source and sink under the type name `kafka` (keys:
/// `ComponentSpec/kafkaSource`, `ComponentSpec/kafkaSink`).
///
/// Every librdkafka property is checked with `rd_kafka_conf_set` when the pipeline is
/// loaded (so `signet lint` reports a typo at its line and column); no connection is
/// made until `open()`.
extension ComponentRegistry {
    public mutating func registerKafkaComponents() {
        registerSource(.kafkaSource) { config, context in
            let properties = try KafkaComponentConfig.properties(
                config, defaults: KafkaSource.defaultProperties,
                firstClass: [("brokers", "bootstrap.servers"), ("group", "group.id")])
            let topics = try config.stringList("topics") ?? []
            guard !topics.isEmpty else { throw config.error("'\(config.path).topics' needs at least one topic", key: "topics") }
            var options = try KafkaSource.Options.configuration.options(config)
            options.properties = properties
            options.topics = topics
            return KafkaSource(options: options, logger: context.logger)
        }
        registerSink(.kafkaSink) { config, context in
            var properties = try KafkaComponentConfig.properties(
                config, defaults: KafkaSink.defaultProperties, firstClass: [("brokers", "bootstrap.servers")])
            // Only when written: the default is already among the sink's default properties.
            if config.contains("delivery_timeout"), let timeout = try config.optionalDuration("delivery_timeout") {
                // Before the user's properties so an explicit message.timeout.ms conflicts loudly below.
                if let clash = properties.first(where: { $0.name == "message.timeout.ms" && $0.location != nil }) {
                    throw ConfigError("set either 'delivery_timeout' or 'properties.message.timeout.ms', not both", at: clash.location)
                }
                let property = KafkaProperty("message.timeout.ms", String(milliseconds(timeout)), location: config.location(of: "delivery_timeout"))
                try KafkaConf().set(property)
                properties.append(property)
            }
            return KafkaSink(options: KafkaSink.Options(properties: properties, topic: try config.string("topic")), logger: context.logger)
        }
    }
}

/// Reading the librdkafka part of a Kafka component's settings.
enum KafkaComponentConfig {
    /// Settings Signet manages itself: overriding them would break at-least-once.
    static let enforced: [String: String] = [
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
    ]

    /// The user's properties (first-class keys first, then `properties:` in file
    /// order), each validated with `rd_kafka_conf_set` on top of `defaults`.
    static func properties(
        _ config: ParsedConfig, defaults: [KafkaProperty], firstClass: [(key: String, property: String)]
    ) throws(ConfigError) -> [KafkaProperty] {
        var result: [KafkaProperty] = []
        for (key, name) in firstClass {
            guard let value = try config.optionalString(key) else { continue }
            result.append(KafkaProperty(name, value, location: config.location(of: key)))
        }
        for entry in try config.stringMap("properties") {
            if let (key, _) = firstClass.first(where: { $0.property == entry.key }), config.contains(key) {
                throw ConfigError("set either '\(key)' or 'properties.\(entry.key)', not both", at: entry.location)
            }
            if let required = enforced[entry.key], defaults.contains(where: { $0.name == entry.key }),
                entry.value.lowercased() != required
            {
                throw ConfigError(
                    "'\(entry.key)' must stay \(required): Signet commits offsets itself, only after every sink acknowledged",
                    at: entry.location)
            }
            result.append(KafkaProperty(entry.key, entry.value, location: entry.location))
        }
        let conf = KafkaConf()
        try conf.set(defaults)
        try conf.set(result, fallback: config.location)
        return result
    }
}

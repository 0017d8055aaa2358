import SignetCore

/// Registers the Kafka source and sink under the type name `kafka`.
///
/// Source keys: `brokers` (→ `bootstrap.servers`), `group` (→ `group.id`), `topics`
/// (a list or a comma-separated string), `poll_timeout` (how long one poll waits for
/// the first message, default 100ms), `properties` (librdkafka properties, verbatim).
///
/// Sink keys: `brokers`, `topic`, `delivery_timeout` (→ `message.timeout.ms`, default
/// 30s: how long one write may wait for acks before it fails and the runner retries),
/// `properties`.
///
/// Every librdkafka property is checked with `rd_kafka_conf_set` when the pipeline is
/// loaded (so `signet lint` reports a typo at its line and column); no connection is
/// made until `open()`.
extension ComponentRegistry {
    public mutating func registerKafkaComponents() {
        registerSource(
            "kafka",
            summary: "consumer-group member reading topics; commits offsets only after every sink acked (keys: brokers, group, topics, poll_timeout, properties)"
        ) { config, context in
            let properties = try KafkaComponentConfig.properties(
                config, defaults: KafkaSource.defaultProperties,
                firstClass: [("brokers", "bootstrap.servers", true), ("group", "group.id", true)])
            guard let topics = try config.stringList("topics"), !topics.isEmpty else { throw config.missing("topics") }
            let pollTimeout = try config.duration("poll_timeout", default: .milliseconds(100))
            guard pollTimeout >= .milliseconds(1), pollTimeout <= .seconds(10) else {
                throw config.error("'poll_timeout' must be between 1ms and 10s", key: "poll_timeout")
            }
            try config.finish()
            return KafkaSource(
                options: KafkaSource.Options(properties: properties, topics: topics, pollTimeout: pollTimeout),
                logger: context.logger)
        }
        registerSink(
            "kafka",
            summary: "idempotent producer (acks=all) to one topic; key and headers from the message (keys: brokers, topic, delivery_timeout, properties)"
        ) { config, context in
            var properties = try KafkaComponentConfig.properties(
                config, defaults: KafkaSink.defaultProperties, firstClass: [("brokers", "bootstrap.servers", true)])
            let topic = try config.string("topic")
            if let timeout = try config.optionalDuration("delivery_timeout") {
                guard timeout >= .milliseconds(1), timeout <= .seconds(3600) else {
                    throw config.error("'delivery_timeout' must be between 1ms and 1h", key: "delivery_timeout")
                }
                let location = config.node("delivery_timeout")?.location
                // Before the user's properties so an explicit message.timeout.ms conflicts loudly below.
                if let clash = properties.first(where: { $0.name == "message.timeout.ms" && $0.location != nil }) {
                    throw ConfigError("set either 'delivery_timeout' or 'properties.message.timeout.ms', not both", at: clash.location)
                }
                let property = KafkaProperty("message.timeout.ms", String(milliseconds(timeout)), location: location)
                try KafkaConf().set(property)
                properties.append(property)
            }
            try config.finish()
            return KafkaSink(options: KafkaSink.Options(properties: properties, topic: topic), logger: context.logger)
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
        _ config: ConfigObject, defaults: [KafkaProperty], firstClass: [(key: String, property: String, required: Bool)]
    ) throws(ConfigError) -> [KafkaProperty] {
        var result: [KafkaProperty] = []
        for (key, name, _) in firstClass {
            guard let value = try config.optionalString(key) else { continue }
            result.append(KafkaProperty(name, value, location: config.node(key)?.location))
        }
        for entry in try config.stringMap("properties") ?? [] {
            if let (key, _, _) = firstClass.first(where: { $0.property == entry.key }), config.contains(key) {
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
        for (key, name, required) in firstClass where required && !result.contains(where: { $0.name == name }) {
            throw config.missing(key)
        }
        let conf = KafkaConf()
        try conf.set(defaults)
        try conf.set(result, fallback: config.location)
        return result
    }
}

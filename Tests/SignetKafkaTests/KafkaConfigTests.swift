import Logging
import SignetCore
import Testing

@testable import SignetKafka

@Suite("Kafka components from YAML")
struct KafkaConfigTests {
    func load(_ yaml: String, environment: [String: String] = [:]) throws(ConfigErrors) -> Pipeline {
        var registry = ComponentRegistry()
        registry.registerCoreComponents()
        registry.registerKafkaComponents()
        return try PipelineLoader(registry: registry, environment: environment, logger: testLogger).load(yaml: yaml, file: "p.yaml")
    }

    func errors(_ yaml: String) -> [ConfigError] {
        do {
            _ = try load(yaml)
            return []
        } catch {
            return error.errors
        }
    }

    @Test func buildsSourceAndSinksWithFirstClassKeysAndProperties() throws {
        let pipeline = try load(
            """
            source:
              type: kafka
              brokers: ${BROKERS}
              group: signet
              topics: notifications, more
              poll_timeout: 50ms
              properties:
                fetch.wait.max.ms: "10"
                sasl.password: ${SECRET}
            sinks:
              events:
                type: kafka
                brokers: ${BROKERS}
                topic: entitlements
                delivery_timeout: 5s
            dead_letter:
              type: kafka
              brokers: ${BROKERS}
              topic: dlq
              format: raw
            """, environment: ["BROKERS": "127.0.0.1:9092", "SECRET": "s3cret"])
        let source = try #require(pipeline.source as? KafkaSource)
        #expect(source.options.topics == ["notifications", "more"])
        #expect(source.options.pollTimeout == .milliseconds(50))
        #expect(source.options.maxUncommittedPerPartition == KafkaSource.Options.defaultMaxUncommittedPerPartition)
        let properties = source.options.properties.map { "\($0.name)=\($0.value)" }
        #expect(properties == ["bootstrap.servers=127.0.0.1:9092", "group.id=signet", "fetch.wait.max.ms=10", "sasl.password=s3cret"])
        let sink = try #require(pipeline.sinks.first?.sink as? KafkaSink)
        #expect(sink.options.topic == "entitlements")
        #expect(sink.options.properties.contains(KafkaProperty("message.timeout.ms", "5000", location: ConfigLocation(file: "p.yaml", line: 15, column: 23))))
        #expect(pipeline.deadLetter.sink is KafkaSink)
    }

    @Test func theBoundOnWorkRedoneIsConfigurable() throws {
        let yaml = { (value: String) in
            "source:\n  type: kafka\n  brokers: b:9092\n  group: g\n  topics: [t]\n  max_uncommitted_per_partition: \(value)\nsinks: { out: { type: stdout } }\ndead_letter: { type: stdout }\n"
        }
        let source = try #require(try load(yaml("250")).source as? KafkaSource)
        #expect(source.options.maxUncommittedPerPartition == 250)
        #expect(errors(yaml("0")).count == 1, "below the minimum")
    }

    @Test func unknownPropertyIsReportedAtItsLine() {
        let found = errors(
            """
            source:
              type: kafka
              brokers: localhost:9092
              group: g
              topics: [t]
              properties:
                fetch.wiat.max.ms: "10"
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(found.count == 1)
        #expect(found.first?.location?.line == 7)
        #expect(found.first?.location?.column == 24)
        #expect(found.first?.message.contains("unknown librdkafka property 'fetch.wiat.max.ms'") == true)
    }

    @Test func invalidValueIsReportedAtItsLine() {
        let found = errors(
            """
            source:
              type: kafka
              brokers: localhost:9092
              group: g
              topics: t
              properties:
                session.timeout.ms: soon
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(found.first?.location?.line == 7)
        #expect(found.first?.message.contains("invalid librdkafka property 'session.timeout.ms'") == true)
    }

    @Test func autoCommitCannotBeTurnedOn() {
        let found = errors(
            """
            source:
              type: kafka
              brokers: localhost:9092
              group: g
              topics: t
              properties:
                enable.auto.commit: "true"
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(found.first?.location?.line == 7)
        #expect(found.first?.message.contains("must stay false") == true)
    }

    @Test func missingAndConflictingKeys() {
        let missingGroup = errors(
            """
            source: { type: kafka, brokers: "localhost:9092", topics: t }
            sinks: { out: { type: kafka, topic: x, brokers: b, properties: { bootstrap.servers: c } } }
            dead_letter: { type: stdout }
            """)
        #expect(missingGroup.contains { $0.message.contains("needs 'group'") && $0.location?.line == 1 })
        #expect(missingGroup.contains { $0.message.contains("either 'brokers' or 'properties.bootstrap.servers'") && $0.location?.line == 2 })
        let typo = errors(
            """
            source: { type: kafka, brokers: b, group: g, topic: t }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(typo.contains { $0.message.contains("needs 'topics'") })
    }
}

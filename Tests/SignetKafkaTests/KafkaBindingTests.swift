import SignetCore
import SignetTestSupport
import Testing

import SignetKafka

/// `source: {type: kafka}` declares each key that sets an option once, bound to ``KafkaSource/Options``.
@Suite("kafka source bindings")
struct KafkaSourceBindingTests {
    @Test func everyDefaultIsTheOptionsValue() throws {
        #expect(
            try boundDefaultMismatches(
                KafkaSource.Options.configuration, in: .kafkaSource, mapping: "brokers: b:9092\ngroup: g\ntopics: [t]") == [])
        #expect(
            ComponentSpec.kafkaSource.fields.map(\.name)
                == ["brokers", "group", "topics", "poll_timeout", "commit_timeout", "max_uncommitted_per_partition", "properties"])
    }
}

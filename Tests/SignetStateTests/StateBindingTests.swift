import SignetCore
import SignetState
import SignetTestSupport
import Testing

/// The state stores and stages declare each key that sets an option once, bound to their options.
@Suite("state component bindings")
struct StateBindingTests {
    @Test func sqliteStore() throws {
        #expect(try boundDefaultMismatches(SQLiteStateStore.Options.configuration, in: .sqliteStore) == [])
        #expect(
            ComponentSpec.sqliteStore.fields.map(\.name)
                == ["path", "durability", "busy_timeout", "cache_size", "outbox_retention", "entitlements"])
    }

    @Test func memoryStore() throws {
        #expect(try boundDefaultMismatches(InMemoryStateStore.Options.configuration, in: .memoryStore) == [])
        #expect(ComponentSpec.memoryStore.fields.map(\.name) == ["max_keys", "outbox_retention", "entitlements"])
        let options = try InMemoryStateStore.Options.configuration.options(
            ComponentSpec.memoryStore.parse(ConfigNode.parse(yaml: "max_keys: 7\noutbox_retention: 1h", file: "m.yaml", environment: [:])))
        #expect(options == InMemoryStateStore.Options(maxKeys: 7, outboxRetention: .seconds(3_600)))
        #expect(InMemoryStateStore(options: options).maxKeys == 7)
    }

    @Test func dedupeStage() throws {
        #expect(try boundDefaultMismatches(DedupeStage.Options.configuration, in: .dedupeStage) == [])
    }

    @Test func transitionStage() throws {
        #expect(try boundDefaultMismatches(TransitionStage.Options.configuration, in: .transitionStage) == [])
        #expect(try boundDefaultMismatches(TransitionStage.Options.expiryConfiguration, in: .transitionStage) == [])
        #expect(
            ComponentSpec.transitionStage.fields.map(\.name)
                == ["key", "retention", "policy", "expiry_sweep", "expiry_leeway", "non_renewing_durations", "store"])
    }

    @Test func transitionPolicy() throws {
        let spec = ComponentSpec(name: "policy", summary: "", fields: TransitionPolicy.configuration.fields)
        #expect(try boundDefaultMismatches(TransitionPolicy.configuration, in: spec) == [])
        let policy = try TransitionPolicy.configuration.options(
            spec.parse(ConfigNode.parse(yaml: "billing_retry_entitled: true\ngrace_period_entitled: false", file: "p.yaml", environment: [:])))
        #expect(policy.billingRetryEntitled && !policy.gracePeriodEntitled && policy.familySharedEntitled)
    }
}

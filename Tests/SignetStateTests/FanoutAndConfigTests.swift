import Foundation
import Logging
import SignetCore
import SignetState
import SignetStateTestSupport
import Testing

@Suite struct FanoutAndConfigTests {
    func build(_ type: String, _ yaml: String, sinks: [String] = ["out", "refunds", "audit"]) throws -> any Stage {
        var registry = ComponentRegistry()
        registry.registerStateComponents()
        let node = try ConfigNode.parse(yaml: yaml, file: "pipeline.yaml", environment: [:])
        let context = ComponentContext(
            path: "stages[0]", sinkNames: sinks, logger: Logger(label: "test"),
            resources: ["default": StateStoreResource(.memory(InMemoryStateStore.Options(maxKeys: 100, outboxRetention: .zero)))])
        let entry = try #require(registry.stages[type])
        return try entry.factory(try entry.spec.parse(node), context)
    }

    func configError(_ type: String, _ yaml: String) -> ConfigError? {
        do {
            _ = try build(type, yaml)
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            return nil
        }
    }

    @Test func routesByTypeEnvironmentAndProduct() async throws {
        let fanout = try build("fanout", """
            routes:
              - sinks: [refunds]
                when: { type: [refunded, revoked], environment: [Production] }
              - sinks: [audit, refunds]
                when:
                  product: ["pro.*"]
            default_sinks: [out]
            """)
        let harness = StateHarness(store: InMemoryStateStore())
        var batch = try await harness.run([Table.subscribed, Table.consumable, Table.refund]).batch
        try await fanout.process(&batch)
        // pro.monthly granted -> audit + refunds; coins granted -> default; pro.monthly refunded -> both rules.
        #expect(batch.records[0].outputs.map(\.routes) == [["audit", "refunds"]])
        #expect(batch.records[1].outputs.map(\.routes) == [["out"]])
        #expect(batch.records[2].outputs.map(\.routes) == [["refunds", "audit"]])
        // Messages that are not entitlement events are left alone.
        var other = RecordBatch(records: [Record(raw: [], position: SourcePosition(stream: "x", offset: 1))])
        other.records[0].outputs = [OutputMessage(value: Array("{}".utf8))]
        try await fanout.process(&other)
        #expect(other.records[0].outputs[0].routes == nil)

        let typed = try #require(fanout as? FanoutStage)
        #expect(typed.sinks(type: "refunded", environment: "Production", product: "pro.monthly") == ["refunds", "audit"])
        #expect(typed.sinks(type: "refunded", environment: "Sandbox", product: "coins") == ["out"])
        #expect(typed.sinks(type: "granted", environment: "Production", product: "coins") == ["out"])
    }

    @Test func redeliveredOutputsAreRoutedTheSameWay() async throws {
        let fanout = try build("fanout", "routes:\n  - sinks: [refunds]\n    when: { type: [granted] }\n")
        let store = try SQLiteStateStore(path: Fixture.temporaryDatabase())
        let harness = StateHarness(store: store)
        var first = try await harness.run([Table.subscribed], acknowledge: false).batch
        try await fanout.process(&first)
        var again = try #require(try await harness.transition.undeliveredOutputs())
        try await fanout.process(&again)
        #expect(first.records[0].outputs == again.records[0].outputs)
        #expect(again.records[0].outputs.first?.routes == ["refunds"])
    }

    @Test func configErrorsPointAtTheLine() {
        let unknownSink = configError("fanout", "routes:\n  - sinks: [refundz]\n")
        #expect(unknownSink?.location?.line == 2)
        #expect(unknownSink?.message.contains("did you mean 'refunds'") == true)
        let badType = configError("fanout", "routes:\n  - sinks: [out]\n    when:\n      type: [refund]\n")
        #expect(badType?.location?.line == 4)
        #expect(badType?.message.contains("refunded") == true)
        let badDefault = configError("fanout", "default_sinks: [nope]\n")
        #expect(badDefault?.location?.line == 1)
        let badPolicy = configError("transition", "key: content\npolicy:\n  billing_retry_entitle: true\n")
        #expect(badPolicy?.location?.line == 3)
        #expect(badPolicy?.message.contains("billing_retry_entitled") == true)
        let badKey = configError("dedupe", "key: transactionId\n")
        #expect(badKey?.location?.line == 1)
        // Store settings moved to the top-level stores: the old keys say where.
        let movedKey = configError("dedupe", "key: content\ndatabase: x.db\n")
        #expect(movedKey?.location?.line == 2)
        #expect(movedKey?.message.contains("stores:") == true)
    }

    @Test func policyAndStoreKeysAreRead() throws {
        let stage = try build("transition", """
            retention: 7d
            key: content
            policy:
              billing_retry_entitled: true
              grace_period_entitled: false
              family_shared_entitled: false
              entitle_on_app_transaction: false
              reject_unknown_types: true
            """)
        let transition = try #require(stage as? TransitionStage)
        #expect(transition.options.policy.billingRetryEntitled)
        #expect(!transition.options.policy.gracePeriodEntitled)
        #expect(!transition.options.policy.familySharedEntitled)
        #expect(!transition.options.policy.entitleOnAppTransaction)
        #expect(transition.options.policy.rejectUnknownTypes)
        #expect(transition.options.dedupeKey == .content)
        #expect(transition.options.retention == .seconds(7 * 86_400))
    }

    @Test func expiryKeysAreRead() throws {
        let defaults = try #require(try build("transition", "retention: 30d") as? TransitionStage)
        #expect(defaults.tickInterval == .seconds(60))
        #expect(defaults.options.expiryLeeway == .seconds(300))
        #expect(defaults.options.policy.nonRenewingDurations.isEmpty)

        let stage = try #require(try build("transition", """
            expiry_sweep: 0s
            expiry_leeway: 2m
            non_renewing_durations:
              season.pass: 30d
              "pass.*": 7d
            """) as? TransitionStage)
        #expect(stage.tickInterval == nil, "0 turns the sweep off")
        #expect(stage.options.expiryLeeway == .seconds(120))
        let durations = stage.options.policy.nonRenewingDurations
        #expect(durations.milliseconds(for: "season.pass") == Int64(30) * 86_400_000)
        #expect(durations.milliseconds(for: "pass.weekly") == Int64(7) * 86_400_000)
        #expect(durations.milliseconds(for: "season.pass.plus") == nil)

        let error = configError("transition", """
            non_renewing_durations:
              season.pass: thirty days
            """)
        #expect(error?.description.contains("season.pass") == true, "\(String(describing: error))")
    }
}

import SignetCore
import SignetTestSupport
import Testing

import SignetJWS

/// `- type: verify` declares each key that sets a checking option once, bound to ``VerifierConfiguration``.
@Suite("verify bindings")
struct VerifyBindingTests {
    @Test func everyDefaultIsTheConfigurationsValue() throws {
        #expect(
            try boundDefaultMismatches(
                VerifierConfiguration.configuration, in: .verifyStage, mapping: "environment: Sandbox\nbundle_id: com.example") == [])
        #expect(
            ComponentSpec.verifyStage.fields.map(\.name)
                == ["roots", "environment", "bundle_id", "app_apple_id", "workers", "max_future_skew", "check_time", "chain_cache_size"])
    }

    @Test func writtenKeysSetTheirOptions() throws {
        let config = try ComponentSpec.verifyStage.parse(ConfigNode.parse(
            yaml: "environment: Sandbox\nbundle_id: com.example\nmax_future_skew: 1m\ncheck_time: currentTime\nchain_cache_size: 9",
            file: "v.yaml", environment: [:]))
        let configuration = try VerifierConfiguration(reading: config)
        #expect(configuration.maxFutureSkew == .seconds(60) && configuration.dateRule == .currentTime)
        #expect(configuration.chainCacheCapacity == 9 && configuration.bundleId == "com.example")
    }
}

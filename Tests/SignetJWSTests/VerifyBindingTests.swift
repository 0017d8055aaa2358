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
                == ["roots", "environment", "bundle_id", "app_apple_id", "workers", "revocation", "max_future_skew", "check_time", "chain_cache_size"])
    }

    @Test func decodeStage() throws {
        #expect(try boundDefaultMismatches(DecodeStage.Options.configuration, in: .decodeStage) == [])
        let options = try DecodeStage.Options.configuration.options(
            ComponentSpec.decodeStage.parse(ConfigNode.parse(yaml: "workers: 3", file: "d.yaml", environment: [:])))
        #expect(DecodeStage(options: options).parallelism == 3 && DecodeStage().parallelism == 1)
    }

    @Test func writtenKeysSetTheirOptions() throws {
        let config = try ComponentSpec.verifyStage.parse(ConfigNode.parse(
            yaml: "environment: Sandbox\nbundle_id: com.example\nmax_future_skew: 1m\ncheck_time: currentTime\nchain_cache_size: 9",
            file: "v.yaml", environment: [:]))
        let configuration = try VerifierConfiguration(reading: config)
        #expect(configuration.maxFutureSkew == .seconds(60) && configuration.dateRule == .currentTime)
        #expect(configuration.chainCacheCapacity == 9 && configuration.bundleId == "com.example")
    }

    @Test("revocation: off by default (no gate, nothing asked); a mode needs the registry's OCSP transport; keys set the policy")
    func revocationPolicy() throws {
        func load(_ revocation: String, transport: Bool) throws -> VerifyStage? {
            var registry = ComponentRegistry()
            registry.registerCoreComponents()
            if transport {
                registry.registerJWSComponents(ocspTransport: { NoOCSPTransport() })
            } else {
                registry.registerJWSComponents()
            }
            let yaml = "source: { type: stdin }\nstages:\n  - type: decode\n  - { type: verify, environment: Sandbox, bundle_id: com.example\(revocation) }"
                + "\nsinks: { out: { type: stdout } }\ndead_letter: { type: file, path: never-opened.ndjson }"
            return try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "v.yaml").stages.last as? VerifyStage
        }
        #expect(try load("", transport: true)?.revocation == nil)
        #expect(try load(", revocation: {mode: off}", transport: false)?.revocation == nil)
        let gate = try #require(try load(", revocation: {mode: soft, grace: 2h, deadline: 2s, retry_timeout: 0s}", transport: true)?.revocation)
        #expect(gate.policy == RevocationPolicy(mode: .soft, grace: .seconds(7_200), deadline: .seconds(2), retryTimeout: .zero))
        #expect(throws: ConfigErrors.self) { try load(", revocation: {mode: hard}", transport: false) }
        #expect(throws: ConfigErrors.self) { try load(", revocation: {mode: sometimes}", transport: true) }
        #expect(RevocationPolicy.configuration.fields.map(\.name) == ["mode", "grace", "deadline", "retry_timeout"])
        #expect(RevocationPolicy.configuration.fields.map(\.defaultValue) == ["off", "1d", "5s", "5m"])
    }
}

/// A transport for pipelines that are only loaded, never run.
private struct NoOCSPTransport: OCSPTransport {
    func post(_ request: [UInt8], to url: String, timeout: Duration) async throws(OCSPTransportError) -> [UInt8] {
        throw .unreachable("not in this test")
    }
}

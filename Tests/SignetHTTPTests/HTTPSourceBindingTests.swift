import SignetCore
import SignetTestSupport
import Testing

import SignetHTTP

/// `source: {type: http}` declares each key once, bound to ``HTTPSource/Options``.
@Suite("http source bindings")
struct HTTPSourceBindingTests {
    @Test func everyDefaultIsTheOptionsValue() throws {
        #expect(try boundDefaultMismatches(HTTPSource.Options.configuration, in: .httpSource) == [])
    }

    @Test func theSpecListsTheBoundKeysThenTheStore() {
        #expect(ComponentSpec.httpSource.fields.map(\.name) == HTTPSource.Options.configuration.bindings.map(\.name) + ["store"])
        let defaults = ComponentSpec.httpSource.fields.compactMap { field in field.defaultValue.map { "\(field.name)=\($0)" } }
        #expect(defaults == [
            "address=127.0.0.1:8080", "path=/notifications", "max_body_bytes=65536", "read_timeout=10s", "body_timeout=10s",
            "max_connections=256", "max_in_flight=4096", "batch_linger=0s", "response_timeout=25s", "retry_after=5s",
            "retry_misconfigured=false",
        ])
    }
}

/// `type: http` (a sink) declares each key that sets an option once, bound to ``HTTPSink/Options``.
@Suite("http sink bindings")
struct HTTPSinkBindingTests {
    @Test func everyDefaultIsTheOptionsValue() throws {
        #expect(try boundDefaultMismatches(HTTPSink.Options.configuration, in: .httpSink, mapping: "url: http://x") == [])
        #expect(ComponentSpec.httpSink.fields.map(\.name) == ["url"] + HTTPSink.Options.configuration.bindings.map(\.name) + ["headers"])
    }

    @Test func writtenKeysSetTheirOptions() throws {
        let options = try HTTPSink.Options(
            ComponentSpec.httpSink.parse(ConfigNode.parse(
                yaml: "url: https://x/e\nmode: batch\nsigning_secret: s3\nheaders: {A: b}", file: "s.yaml", environment: [:])))
        #expect(options.url == "https://x/e" && options.mode == .batch && options.maxBatch == 100)
        #expect(options.signingSecret == Array("s3".utf8) && options.headers.map(\.name) == ["A"])
    }
}

/// The top-level `http:` section declares each key once, bound to ``AdminConfiguration``.
@Suite("http section bindings")
struct AdminBindingTests {
    func configuration(_ yaml: String) throws -> AdminConfiguration {
        try AdminConfiguration.configuration.options(
            ComponentSpec.httpSection.parse(ConfigNode.parse(yaml: yaml, file: "a.yaml", environment: [:])))
    }

    @Test func everyDefaultIsTheConfigurationsValue() throws {
        #expect(try boundDefaultMismatches(AdminConfiguration.configuration, in: .httpSection) == [])
        #expect(try configuration("{}") == AdminConfiguration())
    }

    @Test func addressApiAndStoreSetTheirOptions() throws {
        #expect(try configuration("address: \"[::1]:9000\"\napi: false\nstore: s") == AdminConfiguration(host: "::1", port: 9000, store: nil))
        #expect(try configuration("store: s").store == "s")
        #expect(throws: ConfigError.self) { try configuration("address: nowhere") }
    }
}

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

import Signet
import SignetCore
import SignetHTTP
import Testing

/// `source: {type: http}` keys, as the loader validates them through ``ComponentSpec/httpSource``.
@Suite("http source configuration")
struct HTTPSourceConfigTests {
    static func load(_ source: String) throws(ConfigErrors) -> Pipeline {
        let yaml = """
            source:
            \(source)
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """
        return try PipelineLoader(registry: Signet.makeRegistry(), environment: [:]).load(yaml: yaml, file: "t.yaml")
    }

    @Test func defaultsAndExplicitKeys() throws {
        let defaults = try #require(try Self.load("  type: http").source as? HTTPSource)
        #expect(defaults.options.address == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(defaults.options.path == "/notifications")
        #expect(defaults.options.maxBodyBytes == 65536)
        #expect(defaults.options.responseTimeout == .seconds(25))

        let custom = try #require(
            try Self.load("  type: http\n  address: \"[::1]:9000\"\n  path: /apple\n  max_body_bytes: 32768\n  retry_after: 30s\n  body_timeout: 2s")
                .source as? HTTPSource)
        #expect(custom.options.address == ListenAddress(host: "::1", port: 9000))
        #expect(custom.options.path == "/apple")
        #expect(custom.options.maxBodyBytes == 32768)
        #expect(custom.options.retryAfter == .seconds(30))
        #expect(custom.options.bodyTimeout == .seconds(2))
    }

    @Test(arguments: [
        ("  type: http\n  address: localhost", "host:port"),
        ("  type: http\n  address: \"1.2.3.4:99999\"", "host:port"),
        ("  type: http\n  path: notifications", "must start with /"),
        ("  type: http\n  max_body_bytes: 10", "max_body_bytes"),
        ("  type: http\n  max_conections: 5", "max_connections"),
    ])
    func badKeysAreReportedAtTheirLine(source: String, expected: String) {
        do {
            _ = try Self.load(source)
            Issue.record("accepted: \(source)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
            #expect(error.errors.first?.location?.line == 3, "\(error.description)")
        }
    }

    @Test func listenAddresses() {
        #expect(ListenAddress(parsing: "0.0.0.0:0") == ListenAddress(host: "0.0.0.0", port: 0))
        #expect(ListenAddress(parsing: "[::1]:8080")?.description == "[::1]:8080")
        #expect(ListenAddress(parsing: "::1:8080") == nil, "IPv6 needs brackets")
        #expect(ListenAddress(parsing: ":8080") == nil)
        #expect(ListenAddress(parsing: "host:-1") == nil)
        #expect(ListenAddress(parsing: "127.0.0.1:8080")?.isLoopback == true)
        #expect(ListenAddress(parsing: "0.0.0.0:8080")?.isLoopback == false)
    }
}

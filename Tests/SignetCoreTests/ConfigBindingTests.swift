import SignetTestSupport
import Testing

@testable import SignetCore

/// ``ConfigBinding``: a key bound to an option, its default read from the options type.
@Suite("config bindings")
struct ConfigBindingTests {
    struct Options: Sendable {
        var count = 64 << 10
        var enabled = false
        var path = "/notifications"
        var timeout: Duration = .seconds(10)
        var linger: Duration = .zero
        var short: Duration = .milliseconds(5)
        var long: Duration = .seconds(90)
        var name: String?
        /// Stored as a number, written as text, to try a conversion.
        var port = 8080
    }

    static let configuration = ConfigBindings<Options>(defaults: Options(), [
        ConfigBinding("count", \.count, .int(1...(1 << 20)), "a number"),
        ConfigBinding("enabled", \.enabled, .bool, "a flag"),
        ConfigBinding(
            "path", \.path, .string, "a path",
            check: { path, _, config throws(ConfigError) in
                guard path.hasPrefix("/") else { throw config.error("'\(config.path).path' must start with /", key: "path") }
                return path
            }),
        ConfigBinding("timeout", \.timeout, .duration(nil), "a duration"),
        ConfigBinding("linger", \.linger, .duration(nil), "zero"),
        ConfigBinding("short", \.short, .duration(nil), "milliseconds"),
        ConfigBinding("long", \.long, .duration(nil), "not whole minutes"),
        ConfigBinding(
            "name", \.name, .string, "optional; must differ from path",
            check: { name, options, config throws(ConfigError) in
                guard name != options.path else { throw config.error("'name' must differ from path", key: "name") }
                return name
            }),
        ConfigBinding(
            "port", \.port, .string, "a port written as text", written: { String($0) },
            read: { text, _, config throws(ConfigError) in
                guard let port = Int(text) else { throw config.error("'port' must be a number", key: "port") }
                return port
            }),
    ])

    static let spec = ComponentSpec(name: "bound", summary: "test", fields: configuration.fields)

    static func options(_ yaml: String) throws(ConfigError) -> Options {
        try configuration.options(spec.parse(parseNode(yaml)))
    }

    @Test func defaultsAreRenderedFromTheOptionsValues() {
        let defaults = Self.spec.fields.map { "\($0.name)=\($0.defaultValue ?? "-")" }
        #expect(defaults == [
            "count=65536", "enabled=false", "path=/notifications", "timeout=10s", "linger=0s", "short=5ms",
            "long=90s", "name=-", "port=8080",
        ])
        #expect(Self.spec.field("name")?.requirement == .optional)
        #expect(Self.spec.field("count")?.type.displayName == "int 1...1048576")
    }

    @Test func renderedDurationsReadBack() {
        for duration: Duration in [.zero, .milliseconds(5), .milliseconds(1500), .seconds(25), .seconds(90), .seconds(300), .seconds(86_400 * 7)] {
            let text = duration.configText ?? ""
            #expect(ConfigDuration.parse(text) == .success(duration), "\(text)")
        }
    }

    @Test func absentKeysKeepTheDefaults() throws {
        let options = try Self.options("{}")
        #expect(options.count == 65536 && !options.enabled && options.path == "/notifications")
        #expect(options.timeout == .seconds(10) && options.linger == .zero && options.name == nil && options.port == 8080)
        #expect(try boundDefaultMismatches(Self.configuration, in: Self.spec) == [])
    }

    @Test func writtenKeysSetTheirOptions() throws {
        let options = try Self.options(
            "count: 12\nenabled: yes\npath: /apple\ntimeout: 250ms\nlinger: 2s\nname: first\nport: \"9000\"\n")
        #expect(options.count == 12 && options.enabled && options.path == "/apple")
        #expect(options.timeout == .milliseconds(250) && options.linger == .seconds(2))
        #expect(options.name == "first" && options.port == 9000)
    }

    @Test(arguments: [
        ("path: apple", "path' must start with /"),
        ("path: /same\nname: /same", "'name' must differ from path"),
        ("port: eighty", "'port' must be a number"),
    ])
    func checksThrowAtTheKey(yaml: String, expected: String) {
        #expect {
            _ = try Self.options(yaml)
        } throws: { error in
            let error = error as? ConfigError
            return error?.message.contains(expected) == true && error?.location?.line == yaml.split(separator: "\n").count
        }
    }

    @Test func aRequiredBoundKeyThatIsAbsentIsReported() throws {
        let binding = ConfigBinding<Options>("count", \.count, .int(nil), "a number")
        let bare = ParsedConfig(path: "bound", location: ConfigLocation(file: "c.yaml", line: 1, column: 1), node: try parseNode("{}"), entries: [:])
        var options = Options()
        #expect {
            try binding.apply(bare, to: &options)
        } throws: { error in
            (error as? ConfigError)?.message == "'bound' needs 'count'"
        }
    }

    @Test func aSpecDefaultThatDriftsFromTheOptionsIsFound() throws {
        var drifted = Self.spec
        drifted.fields[0] = ConfigField("count", .int(1...(1 << 20)), .default("1024"), "a number")
        drifted.fields.removeAll { $0.name == "port" }
        #expect(try boundDefaultMismatches(Self.configuration, in: drifted) == [
            "bound.count: the spec says default(\"1024\"), the options default(\"65536\")",
            "bound.count: the default 65536 reads back as 1024",
            "bound.port: bound but not in the spec",
        ])
    }
}

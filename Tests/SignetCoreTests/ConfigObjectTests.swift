import Foundation
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("ConfigObject accessors")
struct ConfigObjectTests {
    func object(_ yaml: String, _ path: String? = nil) throws -> ConfigObject {
        let root = try parseNode(yaml)
        if let path {
            guard let node = child(root, path) else { throw TestFailure("no \(path)") }
            return try ConfigObject(node)
        }
        return try ConfigObject(root)
    }

    @Test func readsTypedValues() throws {
        let config = try object("""
            name: n
            count: 1_000
            negative: -3
            flag: yes
            off: false
            wait: 500ms
            mode: raw
            """)
        #expect(try config.string("name") == "n")
        #expect(try config.int("count", default: 0) == 1000)
        #expect(try config.optionalInt("negative") == -3)
        #expect(try config.bool("flag", default: false) == true)
        #expect(try config.optionalBool("off") == false)
        #expect(try config.duration("wait", default: .zero) == .milliseconds(500))
        #expect(try config.choice("mode", ["json", "raw"]) == "raw")
        #expect(try config.int("absent", default: 7) == 7)
        #expect(try config.bool("absent2", default: true) == true)
        try config.finish()
    }

    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("5s", .seconds(5)), ("10m", .seconds(600)),
        ("24h", .seconds(86_400)), ("7d", .seconds(604_800)), ("1.5s", .milliseconds(1500)),
        ("0s", .zero), ("0.25s", .milliseconds(250)), ("250 ms", .milliseconds(250)),
    ])
    func durations(_ text: String, _ expected: Duration) throws {
        let config = try object("d: \(text)\n")
        #expect(try config.optionalDuration("d") == expected)
    }

    /// A bare number could be milliseconds or seconds: it is an error that suggests both.
    @Test(arguments: ["100", "0", "2.5"])
    func bareNumbersNeedAUnit(_ text: String) throws {
        let config = try object("d: \(text)\n")
        do {
            _ = try config.optionalDuration("d")
            Issue.record("expected '\(text)' to be rejected")
        } catch {
            #expect(error.message.contains("write \(text)ms or \(text)s"), "\(error.message)")
        }
    }

    @Test(arguments: ["5 parsecs", "-1s", "ms", "5x", "five", "nan"])
    func invalidDurations(_ text: String) throws {
        let config = try object("\nd: \(text)\n")
        do {
            _ = try config.optionalDuration("d")
            Issue.record("expected '\(text)' to be rejected")
        } catch {
            #expect(error.location?.line == 2)
            #expect(error.location?.column == 4)
            #expect(error.message.contains("duration"))
        }
    }

    @Test func stringWhereIntExpected() throws {
        let config = try object("settings:\n  batch_size: lots\n", "settings")
        do {
            _ = try config.int("batch_size", default: 1)
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "'settings.batch_size' must be an integer, got 'lots'")
            #expect(error.location == ConfigLocation(file: "c.yaml", line: 2, column: 15))
        }
    }

    @Test func listWhereScalarOrMappingExpected() throws {
        let config = try object("a: [1, 2]\nb: {x: 1}\nc: [1]\n")
        #expect(throws: ConfigError.self) { try config.optionalInt("a") }
        #expect(throws: ConfigError.self) { try config.optionalString("b") }
        do {
            _ = try config.object("c")
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "'c' must be a mapping, not a list")
            #expect(error.location?.line == 3)
        }
        do {
            _ = try config.list("b")
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("must be a list"))
        }
    }

    @Test func outOfRangeInts() throws {
        let config = try object("low: 0\nhigh: 100001\nok: 100000\nhuge: 99999999999999999999999\n")
        do {
            _ = try config.int("low", default: 1, in: 1...100_000)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("between 1 and 100000, got 0"))
            #expect(error.location?.line == 1)
        }
        #expect(throws: ConfigError.self) { try config.int("high", default: 1, in: 1...100_000) }
        #expect(try config.int("ok", default: 1, in: 1...100_000) == 100_000)
        #expect(throws: ConfigError.self) { try config.optionalInt("huge") }
    }

    @Test func boolSpellings() throws {
        let config = try object("a: on\nb: NO\nc: 1\nd: maybe\n")
        #expect(try config.optionalBool("a") == true)
        #expect(try config.optionalBool("b") == false)
        #expect(try config.optionalBool("c") == true)
        #expect(throws: ConfigError.self) { try config.optionalBool("d") }
    }

    @Test func choiceSuggestsTheClosestAllowedValue() throws {
        let config = try object("format: jsno\n")
        do {
            _ = try config.choice("format", ["json", "raw"])
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("'jsno' is not a valid format"))
            #expect(error.message.contains("did you mean 'json'?"))
            #expect(error.location?.line == 1)
            #expect(error.location?.column == 9)
        }
        #expect(try config.choice("other", ["a"], default: "a") == "a")
        #expect(throws: ConfigError.self) { try config.choice("other", ["a"]) }
    }

    @Test func stringListAcceptsListOrCommaSeparatedScalar() throws {
        let config = try object("a: [x, y]\nb: 'x.pem, y.pem,,'\nc: [x, [y]]\n")
        #expect(try config.stringList("a") == ["x", "y"])
        #expect(try config.stringList("b") == ["x.pem", "y.pem"])
        #expect(try config.stringList("missing") == nil)
        #expect(throws: ConfigError.self) { try config.stringList("c") }
    }

    @Test func stringMapKeepsOrderAndLocations() throws {
        let config = try object("props:\n  b.x: 1\n  a.y: two\n  skip:\n")
        let map = try #require(try config.stringMap("props"))
        #expect(map.map(\.key) == ["b.x", "a.y"])
        #expect(map.map(\.value) == ["1", "two"])
        #expect(map[1].location.line == 3)
    }

    @Test func finishReportsUnknownKeyWithSuggestionAndLocation() throws {
        let config = try object("source:\n  type: file\n  path: x\n  max_line_byte: 10\n", "source")
        _ = try config.string("type")
        _ = try config.string("path")
        _ = try config.optionalInt("max_line_bytes")
        do {
            try config.finish()
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "unknown key 'max_line_byte' in 'source' (did you mean 'max_line_bytes'?)")
            #expect(error.location == ConfigLocation(file: "c.yaml", line: 4, column: 3))
        }
    }

    @Test func finishWithoutCloseCandidateHasNoSuggestion() throws {
        let config = try object("type: x\nzzzzzzzz: 1\n")
        _ = try config.string("type")
        do {
            try config.finish()
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "unknown key 'zzzzzzzz' at the top level")
        }
    }

    @Test func nullValuesCountAsAbsentButKnown() throws {
        let config = try object("a:\nb: ~\n")
        #expect(config.contains("a"))
        #expect(config.node("a") == nil)
        #expect(try config.optionalString("b") == nil)
        try config.finish()
    }

    @Test func containsDoesNotMarkKeysRead() throws {
        let config = try object("a: 1\n")
        #expect(config.contains("a"))
        #expect(!config.contains("b"))
        #expect(throws: ConfigError.self) { try config.finish() }
    }

    @Test func missingAndErrorHelpersPointAtTheRightPlace() throws {
        let config = try object("\nsink:\n  type: file\n  path: 3\n", "sink")
        let missing = config.missing("fsync")
        #expect(missing.message == "'sink' needs 'fsync'")
        #expect(missing.location == config.location)
        let error = config.error("bad path", key: "path")
        #expect(error.location?.line == 4)
        #expect(error.location?.column == 9)
        #expect(config.error("whole").location == config.location)
    }

    @Test func mappingRequiredForAnObject() throws {
        let root = try parseNode("- a\n- b\n")
        do {
            _ = try ConfigObject(root)
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "the document must be a mapping, not a list")
        }
        // An empty (null) component is an empty mapping.
        let empty = try ConfigObject(try #require(child(try parseNode("x:\n"), "x")))
        try empty.finish()
    }
}

import Foundation
public import SignetCore

/// A pipeline's test file (`Pipelines/tests/stdin.test.yaml`): which pipeline, the
/// environment it runs with, and the cases.
///
/// ```yaml
/// pipeline: ../stdin.yaml                  # default: ../NAME.yaml (tests/NAME.test.yaml) or NAME.yaml beside it
/// environment:                             # the only variables the pipeline sees
///   SIGNET_ROOT_CERTS: ${SIGNET_TEST_DIR}/fixtures/root.pem
///   SIGNET_BUNDLE_ID: com.example.signet
/// tests:
///   - name: a first purchase is granted
///     input_files: [fixtures/notifications.ndjson]   # relative to this file
///     input_lines: ['{"signedPayload": "..."}']
///     expect:
///       outputs:
///         - { sink: stdout, fields: { type: granted, entitled: true } }
///       dead_letters:
///         - { reason: invalid_signature, stage: verify }
///       dropped: { duplicate: 1 }
/// ```
///
/// The file itself may use `${VAR}`; `${SIGNET_TEST_DIR}` is the folder it is in.
public struct PipelineTestSuite: Sendable {
    /// The test file.
    public var file: String
    /// The pipeline file the cases run.
    public var pipeline: String
    public var environment: [String: String]
    public var cases: [PipelineTestCase]

    /// The variable naming the test file's folder.
    public static let directoryVariable = "SIGNET_TEST_DIR"

    /// The keys of a test file, as a spec (validated like a component, documented in docs/pipelines.md).
    /// Package, like the built-in components' specs: the file format is the documented surface.
    package static let spec = ComponentSpec(
        name: "test file", summary: "a pipeline's test cases (signet test)",
        fields: [
            ConfigField(
                "pipeline", .string, .optional,
                "the pipeline file, relative to this file (default: ../NAME.yaml for tests/NAME.test.yaml, else NAME.yaml beside it)"),
            ConfigField("environment", .stringMap, .optional, "the variables the pipeline sees, and the only ones"),
            ConfigField("tests", .objectList(caseFields), .required, "the cases, each run on fresh in-memory stores"),
        ])

    static let caseFields: [ConfigField] = [
        ConfigField("name", .string, .required, "what the case shows"),
        ConfigField("environment", .stringMap, .optional, "variables for this case on top of the file's"),
        ConfigField(
            "input_files", .stringList(allowed: nil), .optional,
            "NDJSON files read in order, relative to the test file (e.g. made by signet fixtures); a file may repeat"),
        ConfigField("input_lines", .stringList(allowed: nil), .optional, "input lines, a YAML list (each item one line)"),
        ConfigField("expect", .object(expectFields), .required, "what must come out"),
    ]

    static let expectFields: [ConfigField] = [
        ConfigField("outputs", .objectList([
            ConfigField("sink", .string, .optional, "the sink (may be left out when the pipeline has one)"),
            ConfigField("fields", .stringMap, .optional, "dotted paths into the JSON message and their values"),
            ConfigField("value", .string, .optional, "the whole message, exactly"),
        ]), .optional, "messages the sinks receive, in order per sink"),
        ConfigField("dead_letters", .objectList([
            ConfigField("reason", .string, .required, "the reason code"),
            ConfigField("stage", .string, .optional, "the stage that rejected it"),
            ConfigField("detail_contains", .string, .optional, "text the detail contains"),
        ]), .optional, "rejected records, in order"),
        ConfigField("dropped", .map(.int(0...Int.max)), .optional, "drops by reason, e.g. duplicate: 1"),
        ConfigField("counts", .map(.int(0...Int.max)), .optional, "messages per sink"),
        ConfigField("allow_more", .bool, .default("false"), "allow messages and dead letters beyond those listed"),
    ]

    public init(file: String, pipeline: String, environment: [String: String], cases: [PipelineTestCase]) {
        self.file = file
        self.pipeline = pipeline
        self.environment = environment
        self.cases = cases
    }

    /// Reads and validates a test file. `environment` is what `${VAR}`s in the test file
    /// itself may use (the pipeline only sees the file's `environment:`).
    public static func load(file path: String, environment: [String: String]) throws(ConfigErrors) -> PipelineTestSuite {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigErrors([ConfigError("cannot read test file '\(path)': \(error.localizedDescription)", at: nil)])
        }
        let given = (path as NSString).deletingLastPathComponent
        let directory = given.isEmpty ? "." : given
        var variables = environment
        variables[directoryVariable] = (Self.absolute(path) as NSString).deletingLastPathComponent
        let root: ConfigNode
        do {
            root = try ConfigNode.parse(yaml: text, file: path, environment: variables)
        } catch {
            throw ConfigErrors([error])
        }
        var validator = ConfigValidator(storeNames: [])
        let parsed = validator.validate(root, fields: spec.fields)
        guard validator.errors.isEmpty else { throw ConfigErrors(PipelineLoader.sorted(validator.errors)) }
        do {
            let pipeline = try parsed.optionalString("pipeline").map { Self.resolve($0, in: directory) } ?? defaultPipeline(for: path)
            var cases: [PipelineTestCase] = []
            for item in try parsed.objectList("tests") {
                cases.append(try testCase(item, directory: directory))
            }
            return PipelineTestSuite(
                file: path, pipeline: pipeline, environment: Self.dictionary(try parsed.stringMap("environment")), cases: cases)
        } catch {
            throw ConfigErrors([error])
        }
    }

    /// The test file of a pipeline: `tests/NAME.test.yaml` or `NAME.test.yaml` beside it, if one exists.
    public static func testFile(forPipeline path: String) -> String? {
        let directory = (path as NSString).deletingLastPathComponent
        let base = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        let candidates = [
            (directory as NSString).appendingPathComponent("tests/\(base).test.yaml"),
            (directory as NSString).appendingPathComponent("\(base).test.yaml"),
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// Whether `path` names a test file rather than a pipeline.
    public static func isTestFile(_ path: String) -> Bool { path.hasSuffix(".test.yaml") || path.hasSuffix(".test.yml") }

    private static func defaultPipeline(for testFile: String) -> String {
        let directory = (testFile as NSString).deletingLastPathComponent
        let name = (testFile as NSString).lastPathComponent
        let base = name.replacingOccurrences(of: ".test.yaml", with: "").replacingOccurrences(of: ".test.yml", with: "")
        if (directory as NSString).lastPathComponent == "tests" {
            return ((directory as NSString).deletingLastPathComponent as NSString).appendingPathComponent("\(base).yaml")
        }
        return (directory as NSString).appendingPathComponent("\(base).yaml")
    }

    private static func testCase(_ config: ParsedConfig, directory: String) throws(ConfigError) -> PipelineTestCase {
        var inputs: [[UInt8]] = []
        for file in try config.stringList("input_files") ?? [] {
            let path = resolve(file, in: directory)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw config.error("cannot read input file '\(path)'", key: "input_files")
            }
            inputs += data.split(separator: 0x0A, omittingEmptySubsequences: true).map { Array($0) }
        }
        if let node = config.node.child("input_lines") {
            // Read as written: a line of JSON has commas, so a scalar is one line, not a comma list.
            switch node.value {
            case .scalar(let text): inputs.append(Array(text.utf8))
            case .sequence(let items):
                for item in items { if case .scalar(let text) = item.value { inputs.append(Array(text.utf8)) } }
            default: break
            }
        }
        guard let expect = try config.object("expect") else { throw config.error("'\(config.path)' needs 'expect'") }
        var expectation = PipelineTestExpectation()
        for output in try expect.objectList("outputs") {
            let fields = try output.stringMap("fields").map { (path: $0.key, value: $0.value) }
            let value = try output.optionalString("value")
            if fields.isEmpty, value == nil {
                throw output.error("'\(output.path)' needs 'fields' or 'value'")
            }
            expectation.outputs.append(.init(sink: try output.optionalString("sink"), fields: fields, value: value))
        }
        for dead in try expect.objectList("dead_letters") {
            expectation.deadLetters.append(.init(
                reason: try dead.string("reason"), stage: try dead.optionalString("stage"),
                detailContains: try dead.optionalString("detail_contains")))
        }
        if expect.contains("dropped") { expectation.dropped = try counts(expect.map("dropped")) }
        if expect.contains("counts") { expectation.counts = try counts(expect.map("counts")) }
        expectation.allowsMore = try expect.bool("allow_more")
        return PipelineTestCase(
            name: try config.string("name"), inputs: inputs, environment: dictionary(try config.stringMap("environment")),
            expectation: expectation, location: config.location)
    }

    private static func counts(_ entries: [ConfigValue.MapEntry]) -> [String: Int] {
        var result: [String: Int] = [:]
        for entry in entries { if case .int(let count) = entry.value { result[entry.name] = count } }
        return result
    }

    private static func dictionary(_ entries: [ConfigValue.StringMapEntry]) -> [String: String] {
        Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    static func resolve(_ path: String, in directory: String) -> String {
        path.hasPrefix("/") ? path : (directory as NSString).appendingPathComponent(path)
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
    }
}

extension ConfigNode {
    /// The value of `key` in a mapping node (nil when absent, null, or not a mapping).
    func child(_ key: String) -> ConfigNode? {
        guard case .mapping(let pairs) = value,
            let pair = pairs.first(where: { if case .scalar(key) = $0.key.value { true } else { false } })
        else { return nil }
        if case .null = pair.value.value { return nil }
        return pair.value
    }
}

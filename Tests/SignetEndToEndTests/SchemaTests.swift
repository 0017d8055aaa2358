import Foundation
import SignetTestSupport
import Testing

/// The JSON Schemas in Schemas/ are part of the contract: they must at least be valid
/// schemas, and the shipped pipelines must match the pipeline schema.
@Suite("Schemas", .tags(.endToEnd))
struct SchemaTests {
    static let schemas = FixturePaths.packageRoot.appendingPathComponent("Schemas")
    static let pipelines = FixturePaths.packageRoot.appendingPathComponent("Pipelines")

    /// Runs a Python snippet with jsonschema and PyYAML; nil when they are not installed.
    static func python(_ script: String, _ arguments: [String]) throws -> (status: Int32, output: String)? {
        guard Python.canImport(["jsonschema", "yaml"]) else { return nil }
        return try Python.run(script, arguments: arguments)
    }

    @Test(.ownThread) func everySchemaIsAValidDraft2020Schema() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.schemas.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 5)
        let script = """
            import json, sys, jsonschema
            for path in sys.argv[1:]:
                jsonschema.Draft202012Validator.check_schema(json.load(open(path)))
            print("checked", len(sys.argv) - 1)
            """
        guard let result = try Self.python(script, files.map { Self.schemas.appendingPathComponent($0).path }) else {
            print("skipped: python3 with jsonschema and yaml is not installed (scripts/install-deps.sh installs them)")
            return
        }
        #expect(result.status == 0, "\(result.output)")
    }

    @Test(.ownThread) func shippedPipelinesMatchThePipelineSchema() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.pipelines.path).filter { $0.hasSuffix(".yaml") }
        #expect(files.contains("stdin.yaml") && files.contains("kafka.yaml"))
        let script = """
            import json, sys, yaml, jsonschema
            schema = json.load(open(sys.argv[1]))
            for path in sys.argv[2:]:
                jsonschema.validate(yaml.safe_load(open(path)), schema)
            print("valid")
            """
        let arguments = [Self.schemas.appendingPathComponent("pipeline.schema.json").path]
            + files.map { Self.pipelines.appendingPathComponent($0).path }
        guard let result = try Self.python(script, arguments) else {
            print("skipped: python3 with jsonschema and yaml is not installed (scripts/install-deps.sh installs them)")
            return
        }
        #expect(result.status == 0, "\(result.output)")
        // The schema is not vacuous: a pipeline with a misspelled key must fail it.
        let broken = try TemporaryDirectory()
        defer { broken.remove() }
        let path = broken.path("broken.yaml")
        try "source: {type: stdin, max_line_byte: 5}\nsinks: {out: {type: stdout}}\ndead_letter: {type: stdout}\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let rejected = try Self.python(script, [arguments[0], path])
        #expect(rejected?.status != 0)
    }
}

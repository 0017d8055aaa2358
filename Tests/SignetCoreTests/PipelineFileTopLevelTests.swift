import Foundation
import SignetTestSupport
import Testing

@testable import SignetCore

/// The top level of a pipeline file as ``PipelineFileSpec`` reads it (what `ConfigObject`
/// did before it was folded into the spec), and the wording every configuration error shares.
@Suite("pipeline file: the top level and the wording of errors")
struct PipelineFileTopLevelTests {
    func top(_ yaml: String) throws -> PipelineFileSpec.TopLevel {
        try PipelineFileSpec.TopLevel(try parseNode(yaml))
    }

    @Test("an unknown top-level key is reported with the closest known one and where it is")
    func unknownKeys() throws {
        let file = try top("source:\n  type: stdin\nsinkz:\n  out: { type: stdout }\n")
        let unknown = try #require(file.unknownKey(known: PipelineFileSpec.pipeline.names))
        #expect(unknown.message == "unknown key 'sinkz' at the top level (did you mean 'sinks'?)")
        #expect(unknown.location == ConfigLocation(file: "c.yaml", line: 3, column: 1))
        #expect(try top("zzzzzzzz: 1\n").unknownKey(known: ["source"])?.message == "unknown key 'zzzzzzzz' at the top level")
        #expect(try top("source: {}\n").unknownKey(known: ["source"]) == nil)
    }

    @Test("null counts as absent but written; named entries keep file order; shapes are checked")
    func shapes() throws {
        let file = try top("description:\nsinks:\n  b: { type: stdout }\n  a: { type: stdout }\nstages: {}\nstores: [x]\n")
        #expect(file.contains("description") && file.node("description") == nil)
        #expect(!file.contains("source") && file.node("source") == nil)
        #expect(try file.entries("sinks")?.map(\.name) == ["b", "a"])
        #expect(throws: ConfigError("'stages' must be a list, not a mapping", at: ConfigLocation(file: "c.yaml", line: 5, column: 9))) {
            try file.list("stages")
        }
        #expect(throws: ConfigError.self) { try file.entries("stores") }
        #expect(try top("sinks:\n").entries("sinks") == nil)
    }

    @Test("missing keys name the pipeline; an error about a value points at it, or at the file when it is absent")
    func errorsPointAtTheRightPlace() throws {
        let file = try top("\nsinks:\n  out: 3\n")
        let missing = file.missing("source")
        #expect(missing.message == "the pipeline needs 'source'")
        #expect(missing.location == file.root.location)
        #expect(file.error("bad", key: "sinks").location?.line == 3)
        #expect(file.error("bad", key: "stages").location == file.root.location)
    }

    @Test("a document that is not a mapping is refused; an empty mapping is one")
    func theDocumentIsAMapping() throws {
        #expect(throws: ConfigError.self) { try top("- a\n- b\n") }
        let refusal = #expect(throws: ConfigError.self) { try top("- a\n") }
        #expect(refusal?.message == "the document must be a mapping, not a list")
        #expect(try top("{}\n").unknownKey(known: []) == nil)
    }

    @Test("suggestions: the closest within a small distance, none when far, the same whatever the order of candidates")
    func suggestions() {
        #expect(ConfigWording.suggestion(for: "max_line_byte", among: ["max_line_bytes", "path"]) == " (did you mean 'max_line_bytes'?)")
        #expect(ConfigWording.suggestion(for: "zzzzzzzz", among: ["source", "sinks"]) == "")
        #expect(ConfigWording.suggestion(for: "ab", among: ["xy"]) == "")
        // 'sinkx' is one edit from both: alphabetical order decides, not the order given.
        #expect(ConfigWording.suggestion(for: "sinkx", among: ["sinks", "sinka"]) == ConfigWording.suggestion(for: "sinkx", among: ["sinka", "sinks"]))
    }
}

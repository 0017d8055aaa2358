import SignetTestSupport
import Testing

@testable import SignetCore

/// The SignetCore components whose keys are bound to their options: each spec default is
/// the options type's value, and reads back as it.
@Suite("core component bindings")
struct CoreBindingTests {
    @Test func lineSources() throws {
        #expect(try boundDefaultMismatches(LineSource.Options.configuration, in: .stdinSource) == [])
        #expect(try boundDefaultMismatches(LineSource.Options.fileConfiguration, in: .fileSource, mapping: "path: in.ndjson") == [])
        #expect(ComponentSpec.fileSource.fields.map(\.name) == ["path", "max_line_bytes", "skip_blank_lines", "checkpoint"])
    }

    @Test func settings() throws {
        #expect(try boundDefaultMismatches(PipelineSettings.configuration, in: PipelineSettings.spec) == [])
        let never = try PipelineSettings(PipelineSettings.spec.parse(parseNode("progress_interval: 0s")))
        #expect(never.progressInterval == nil, "0s is never")
    }
}

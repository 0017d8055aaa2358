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

    @Test func fileSink() throws {
        #expect(try boundDefaultMismatches(FileSink.Options.configuration, in: .fileSink, mapping: "path: out.ndjson") == [])
        #expect(ComponentSpec.fileSink.fields.map(\.name) == ["path", "fsync", "max_bytes", "keep"])
        #expect(FileSink.Options().rotation == nil, "max_bytes 0: never rotated")
        let capped = try FileSink.Options.configuration.options(
            ComponentSpec.fileSink.parse(parseNode("path: out.ndjson\nfsync: false\nmax_bytes: 4096\nkeep: 2")))
        #expect(!capped.fsync && capped.rotation == FileSink.Rotation(maxBytes: 4096, keep: 2))
    }

    @Test func settings() throws {
        #expect(try boundDefaultMismatches(PipelineSettings.configuration, in: PipelineSettings.spec) == [])
        let never = try PipelineSettings(PipelineSettings.spec.parse(parseNode("progress_interval: 0s")))
        #expect(never.progressInterval == nil, "0s is never")
    }

    @Test func deadLetter() throws {
        let spec = ComponentSpec(name: "dead_letter", summary: "", fields: DeadLetterOutput.fields)
        #expect(try boundDefaultMismatches(DeadLetterOutput.configuration, in: spec) == [])
        #expect(DeadLetterOutput.fields.compactMap(\.defaultValue) == ["json", "1048576"])
        let raw = try DeadLetterOutput.configuration.options(spec.parse(parseNode("format: raw\nmax_input_bytes: 64")))
        #expect(raw.format == .raw && raw.maxInputBytes == 64)
    }
}

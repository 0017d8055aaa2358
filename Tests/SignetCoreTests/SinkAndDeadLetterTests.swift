import Foundation
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("FileSink and DeadLetterOutput")
struct SinkAndDeadLetterTests {
    @Test func fileSinkCreatesParentFoldersAndAppends() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let path = dir.path("deep/er/out.ndjson")
        let sink = FileSink(path: path)
        try await sink.open()
        try await sink.write([OutputMessage(value: Array("one".utf8)), OutputMessage(value: Array("two".utf8))])
        try await sink.write([])
        try await sink.close()
        #expect(text(try dir.read("deep/er/out.ndjson")) == "one\ntwo\n")

        // A second sink on the same file appends, never truncates.
        let again = FileSink(path: path, fsync: false)
        try await again.open()
        try await again.write([OutputMessage(value: [0xFF, 0x00, 0x41])])
        try await again.close()
        #expect(try dir.read("deep/er/out.ndjson") == Array("one\ntwo\n".utf8) + [0xFF, 0x00, 0x41, 0x0A])
    }

    @Test("a line torn by a killed writer is cut before appending; whole lines are kept",
          arguments: [
              ("one\ntwo\n", "one\ntwo\nnew\n"),
              ("one\ntw", "one\nnew\n"),
              ("torn without any newline", "new\n"),
              ("one\n" + String(repeating: "x", count: 150_000), "one\nnew\n"),  // a fragment over several read chunks
              (String(repeating: "y", count: 70_000) + "\n" + String(repeating: "z", count: 70_000),
               String(repeating: "y", count: 70_000) + "\nnew\n"),
              ("", "new\n"),
          ])
    func fileSinkCutsATornLastLine(_ before: String, _ after: String) async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let path = dir.path("out.ndjson")
        try Data(before.utf8).write(to: URL(fileURLWithPath: path))
        let sink = FileSink(path: path, fsync: false)
        try await sink.open()
        try await sink.write([OutputMessage(value: Array("new".utf8))])
        try await sink.close()
        #expect(text(try dir.read("out.ndjson")) == after)
    }

    @Test("max_bytes: a batch that would pass the cap starts a new file; full ones shift to .1, .2; the oldest past keep goes; no batch is split")
    func fileSinkRotatesBySize() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let path = dir.path("events.ndjson")
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: path))  // 4 bytes already there count too
        let sink = FileSink(path: path, fsync: false, rotation: FileSink.Rotation(maxBytes: 20, keep: 2))
        try await sink.open()
        func batch(_ names: String...) -> [OutputMessage] { names.map { OutputMessage(value: Array($0.utf8)) } }
        try await sink.write(batch("aaaa", "bbbb"))        // 4 + 10 = 14: fits
        try await sink.write(batch("cccc", "dddd"))        // 14 + 10 > 20: rotates, then 10
        try await sink.write(batch("eeeeeeeeeeeeeeeeeeeeeeee"))  // 25 alone: rotates, whole into one file
        try await sink.write(batch("ffff"))                // 25 + 5 > 20: rotates; the oldest (old..bbbb) is dropped
        try await sink.close()
        #expect(text(try dir.read("events.ndjson")) == "ffff\n")
        #expect(text(try dir.read("events.ndjson.1")) == "eeeeeeeeeeeeeeeeeeeeeeee\n")
        #expect(text(try dir.read("events.ndjson.2")) == "cccc\ndddd\n")
        #expect(!FileManager.default.fileExists(atPath: path + ".3"), "keep: 2")

        // A restart goes on from the size the file has.
        let again = FileSink(path: path, fsync: false, rotation: FileSink.Rotation(maxBytes: 20, keep: 2))
        try await again.open()
        try await again.write(batch("gggg", "hhhh"))       // 5 + 10 = 15: fits
        try await again.close()
        #expect(text(try dir.read("events.ndjson")) == "ffff\ngggg\nhhhh\n")
    }

    @Test func fileSinkRefusesWritesWhenNotOpen() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let sink = FileSink(path: dir.path("x.ndjson"))
        await #expect(throws: SinkError.self) { try await sink.write([OutputMessage(value: [0x41])]) }
        try await sink.open()
        try await sink.close()
        await #expect(throws: SinkError.self) { try await sink.write([OutputMessage(value: [0x41])]) }
    }

    @Test func fileSinkOpenFailsForAnUnwritablePath() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        try dir.write("file", "x")
        // A path whose "folder" is a regular file cannot be created.
        let sink = FileSink(path: dir.path("file/out.ndjson"))
        await #expect(throws: (any Error).self) { try await sink.open() }
    }

    func rejection() -> RecordRejection { RecordRejection("invalid_signature", "signature \"bad\"\nsecond line") }

    func decode(_ message: OutputMessage) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
    }

    @Test func jsonDeadLetterForALineRecord() throws {
        let record = Record(raw: Array("{\"x\":\"é\"}".utf8), position: SourcePosition(stream: "/in.ndjson", offset: 42, resumeByteOffset: 900))
        let time = Date(timeIntervalSince1970: 1_700_000_000.5)
        let message = DeadLetterOutput(sink: CaptureSink()).message(for: record, rejection: rejection(), stage: "verify", at: time)
        let object = try decode(message)
        #expect(object["reason"] as? String == "invalid_signature")
        #expect(object["detail"] as? String == "signature \"bad\"\nsecond line")
        #expect(object["stage"] as? String == "verify")
        let source = try #require(object["source"] as? [String: Any])
        #expect(source["stream"] as? String == "/in.ndjson")
        #expect(source["line"] as? Int == 42)
        #expect(source["partition"] == nil && source["offset"] == nil)
        #expect(object["input"] as? String == "{\"x\":\"é\"}")
        #expect(object["inputBytes"] as? Int == 10)
        #expect(object["inputBase64"] == nil)
        #expect(object["truncated"] == nil)
        let rejectedAt = try #require(object["rejectedAt"] as? String)
        #expect(rejectedAt == "2023-11-14T22:13:20.500Z")
        let id = try #require(object["id"] as? String)
        #expect(id == DeadLetterOutput.stableId(input: record.raw, reason: "invalid_signature"))
        #expect(message.headers.map(\.name) == ["signet-reason", "signet-detail", "signet-stage", "signet-source", "signet-dead-letter-id"])
        #expect(message.headers.map { text($0.value) } == [
            "invalid_signature", "signature \"bad\"\nsecond line", "verify", "/in.ndjson:42", id,
        ])
    }

    @Test func jsonDeadLetterForAKafkaRecord() throws {
        let record = Record(raw: Array("x".utf8), position: SourcePosition(stream: "notifications", partition: 3, offset: 1234))
        let message = DeadLetterOutput(sink: CaptureSink()).message(for: record, rejection: rejection(), stage: "decode")
        let source = try #require(try decode(message)["source"] as? [String: Any])
        #expect(source["stream"] as? String == "notifications")
        #expect(source["partition"] as? Int == 3)
        #expect(source["offset"] as? Int == 1234)
        #expect(source["line"] == nil)
        #expect(message.headers.first { $0.name == "signet-source" }?.value == Array("notifications[3]@1234".utf8))
    }

    @Test func jsonDeadLetterUsesBase64ForInvalidUTF8() throws {
        let raw: [UInt8] = [0x7B, 0xFF, 0xFE, 0x00, 0x7D]
        let record = Record(raw: raw, position: SourcePosition(stream: "stdin", offset: 1))
        let object = try decode(DeadLetterOutput(sink: CaptureSink()).message(for: record, rejection: rejection(), stage: "decode"))
        #expect(object["input"] == nil)
        let base64 = try #require(object["inputBase64"] as? String)
        #expect(Data(base64Encoded: base64).map(Array.init) == raw)
        #expect(object["inputBytes"] as? Int == 5)
    }

    @Test func jsonDeadLetterTruncatesLongInput() throws {
        let raw = Array(String(repeating: "abcdefgh", count: 100).utf8)
        let record = Record(raw: raw, position: SourcePosition(stream: "stdin", offset: 9))
        let output = DeadLetterOutput(sink: CaptureSink(), format: .json, maxInputBytes: 64)
        let object = try decode(output.message(for: record, rejection: rejection(), stage: "decode"))
        #expect(object["truncated"] as? Bool == true)
        #expect(object["inputBytes"] as? Int == 800)
        #expect(object["input"] as? String == String(repeating: "abcdefgh", count: 8))

        // Exactly at the limit is not truncated.
        let exact = Record(raw: Array(raw.prefix(64)), position: SourcePosition(stream: "stdin", offset: 9))
        #expect(try decode(output.message(for: exact, rejection: rejection(), stage: "decode"))["truncated"] == nil)
    }

    @Test func truncatedInvalidUTF8StaysBase64AndFlagged() throws {
        let raw = [UInt8](repeating: 0xFF, count: 200)
        let record = Record(raw: raw, position: SourcePosition(stream: "stdin", offset: 1))
        let object = try decode(
            DeadLetterOutput(sink: CaptureSink(), maxInputBytes: 64).message(for: record, rejection: rejection(), stage: "s"))
        #expect(object["truncated"] as? Bool == true)
        #expect(Data(base64Encoded: try #require(object["inputBase64"] as? String))?.count == 64)
    }

    @Test func rawDeadLetterIsTheInputUnchanged() {
        let raw: [UInt8] = [0x00, 0xFF, 0x0A, 0x41]
        let record = Record(raw: raw, position: SourcePosition(stream: "in", partition: 0, offset: 7))
        let message = DeadLetterOutput(sink: CaptureSink(), format: .raw, maxInputBytes: 64)
            .message(for: record, rejection: rejection(), stage: "verify")
        #expect(message.value == raw)
        #expect(message.key == nil)
        #expect(message.routes == nil)
        #expect(message.headers == [
            .init("signet-reason", "invalid_signature"), .init("signet-detail", "signature \"bad\"\nsecond line"),
            .init("signet-stage", "verify"), .init("signet-source", "in[0]@7"),
            .init("signet-dead-letter-id", DeadLetterOutput.stableId(input: raw, reason: "invalid_signature")),
        ])
    }

    @Test func stdoutSinkWritesNothingForAnEmptyBatch() async throws {
        // Only checks that an empty write succeeds; real stdout output is covered by CLI tests.
        try await StdoutSink().write([])
    }
}

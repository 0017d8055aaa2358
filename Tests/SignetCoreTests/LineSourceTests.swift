import Foundation
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("LineSource on files", .timeLimit(.minutes(10)))
struct LineSourceTests {
    func options(max: Int = 1 << 20, skipBlank: Bool = true, checkpoint: String? = nil) -> LineSource.Options {
        var options = LineSource.Options()
        options.maxLineBytes = max
        options.skipBlankLines = skipBlank
        options.checkpointPath = checkpoint
        return options
    }

    /// Opens, reads everything in batches of `batch`, closes.
    func readAll(_ path: String, _ options: LineSource.Options, batch: Int = 100) async throws -> [Record] {
        let source = LineSource(path: path, options: options)
        try await source.open()
        var records: [Record] = []
        while let next = try await source.nextBatch(maxRecords: batch) { records += next }
        #expect(try await source.nextBatch(maxRecords: batch) == nil)
        try await source.close()
        return records
    }

    @Test func normalLinesWithPositions() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n")
        let records = try await readAll(file, options(), batch: 2)
        #expect(records.map { text($0.raw) } == ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"])
        #expect(records.map(\.position.offset) == [1, 2, 3])
        #expect(records.map(\.position.resumeByteOffset) == [8, 16, 24])
        #expect(records.allSatisfy { $0.position.stream == file && $0.position.partition == nil && $0.isActive })
    }

    @Test func crlfIsStrippedButInnerCarriageReturnsAreKept() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\r\nb\rc\r\nd\n")
        let records = try await readAll(file, options())
        #expect(records.map { text($0.raw) } == ["a", "b\rc", "d"])
        #expect(records.map(\.position.resumeByteOffset) == [3, 8, 10])
    }

    @Test func blankLinesAreSkippedByDefaultAndLineNumbersStayTrue() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\n\n  \t\n\r\nb\n")
        let records = try await readAll(file, options())
        #expect(records.map { text($0.raw) } == ["a", "b"])
        #expect(records.map(\.position.offset) == [1, 5])
    }

    @Test func blankLinesAreKeptWhenAsked() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\n\n  \n\r\nb\n")
        let records = try await readAll(file, options(skipBlank: false))
        #expect(records.map { text($0.raw) } == ["a", "", "  ", "", "b"])
        #expect(records.map(\.position.offset) == [1, 2, 3, 4, 5])
        #expect(records.allSatisfy { $0.isActive })
    }

    @Test func lastLineWithoutNewline() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "first\nlast")
        let records = try await readAll(file, options())
        #expect(records.map { text($0.raw) } == ["first", "last"])
        #expect(records.last?.position.resumeByteOffset == 10)
    }

    @Test func emptyFileEndsAtOnce() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("empty.ndjson", "")
        #expect(try await readAll(file, options()).isEmpty)
    }

    @Test func invalidUTF8PassesThroughUntouched() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let bad: [UInt8] = [0x7B, 0xFF, 0xFE, 0xC3, 0x28, 0x80, 0x00, 0x7D]
        let file = try dir.write("in.ndjson", bytes: bad + [0x0A] + Array("ok".utf8) + [0x0A])
        let records = try await readAll(file, options())
        #expect(records.map(\.raw) == [bad, Array("ok".utf8)])
        #expect(records.allSatisfy { $0.isActive })
    }

    @Test func tooLongLineBecomesAPreRejectedRecordWithItsPrefix() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let long = (0..<2000).map { _ in UInt8(ascii: "x") }
        var bytes = Array("short\n".utf8)
        bytes += Array("ABC".utf8) + long + [0x0A]
        bytes += Array("after\n".utf8)
        let file = try dir.write("in.ndjson", bytes: bytes)
        let records = try await readAll(file, options(max: 1024))
        #expect(records.count == 3)
        #expect(records.map(\.position.offset) == [1, 2, 3])
        let rejected = records[1]
        #expect(rejected.raw.count == 1024)
        #expect(Array(rejected.raw.prefix(3)) == Array("ABC".utf8))
        #expect(rejected.position.resumeByteOffset == Int64(6 + 2003 + 1))
        guard case .rejected(let rejection, let stage) = rejected.status else {
            Issue.record("expected a rejected record, got \(rejected.status)")
            return
        }
        #expect(rejection.reason == .lineTooLarge)
        #expect(rejection.reason.rawValue == "line_too_large")
        #expect(stage == "source")
        #expect(rejection.detail.contains("2003 bytes"))
        #expect(rejection.detail.contains("1024"))
        #expect(text(records[2].raw) == "after")
        #expect(records[0].isActive && records[2].isActive)
    }

    @Test func lineOfExactlyTheLimitIsAccepted() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let line = [UInt8](repeating: UInt8(ascii: "y"), count: 1024)
        let file = try dir.write("in.ndjson", bytes: line + [0x0A] + line + [0x78, 0x0A])
        let records = try await readAll(file, options(max: 1024))
        #expect(records.count == 2)
        #expect(records[0].isActive)
        #expect(records[0].raw == line)
        #expect(!records[1].isActive)
    }

    @Test func crlfLineOfExactlyTheLimitIsAccepted() async throws {
        // Regression: the \r of a CRLF terminator once counted against max_line_bytes.
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let line = [UInt8](repeating: UInt8(ascii: "y"), count: 1024)
        let file = try dir.write("in.ndjson", bytes: line + [0x0D, 0x0A] + Array("next\r\n".utf8))
        let records = try await readAll(file, options(max: 1024))
        #expect(records.count == 2)
        #expect(records.first?.isActive == true)
        #expect(records.first?.raw == line)
    }

    @Test func tenMegabyteLineWithOneMebibyteLimit() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let size = 10 * 1024 * 1024
        var bytes = Array("head\n".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "z"), count: size)
        bytes += Array("\ntail\n".utf8)
        let file = try dir.write("big.ndjson", bytes: bytes)
        bytes = []
        let records = try await readAll(file, options(max: 1 << 20), batch: 10)
        #expect(records.count == 3)
        #expect(records.map(\.position.offset) == [1, 2, 3])
        #expect(text(records[0].raw) == "head")
        #expect(records[1].raw.count == 1 << 20)
        #expect(records[1].raw.allSatisfy { $0 == UInt8(ascii: "z") })
        if case .rejected(let rejection, _) = records[1].status {
            #expect(rejection.reason == .lineTooLarge)
            #expect(rejection.detail.contains("\(size) bytes"))
        } else {
            Issue.record("the 10 MB line should be rejected")
        }
        #expect(text(records[2].raw) == "tail")
        #expect(records[2].position.resumeByteOffset == Int64(5 + size + 6))
    }

    @Test func checkpointResumesAfterTheCommittedLine() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "l1\nl2\n\nl4\nl5\n")
        let checkpoint = dir.path("in.checkpoint")
        let first = LineSource(path: file, options: options(checkpoint: checkpoint))
        try await first.open()
        let batch = try #require(try await first.nextBatch(maxRecords: 2))
        #expect(batch.map { text($0.raw) } == ["l1", "l2"])
        // Commit order within a batch does not matter: the furthest position wins.
        try await first.commit(batch.map(\.position).reversed())
        // Read more without committing: a crash here must not lose l4.
        let uncommitted = try #require(try await first.nextBatch(maxRecords: 1))
        #expect(uncommitted.map { text($0.raw) } == ["l4"])
        try await first.close()

        let second = LineSource(path: file, options: options(checkpoint: checkpoint))
        try await second.open()
        var rest: [Record] = []
        while let next = try await second.nextBatch(maxRecords: 10) { rest += next }
        try await second.close()
        #expect(rest.map { text($0.raw) } == ["l4", "l5"])
        #expect(rest.map(\.position.offset) == [4, 5])
        #expect(rest.map(\.position.resumeByteOffset) == [10, 13])

        // Committing the end and reopening reads nothing.
        try await second.commit(rest.map(\.position))
        let third = LineSource(path: file, options: options(checkpoint: checkpoint))
        try await third.open()
        #expect(try await third.nextBatch(maxRecords: 10) == nil)
        try await third.close()
    }

    @Test func checkpointOfAnotherStreamIsIgnored() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let a = try dir.write("a.ndjson", "a1\na2\n")
        let b = try dir.write("b.ndjson", "b1\nb2\n")
        let checkpoint = dir.path("shared.checkpoint")
        let sourceA = LineSource(path: a, options: options(checkpoint: checkpoint))
        try await sourceA.open()
        let batch = try #require(try await sourceA.nextBatch(maxRecords: 1))
        try await sourceA.commit(batch.map(\.position))
        try await sourceA.close()
        let records = try await readAll(b, options(checkpoint: checkpoint))
        #expect(records.map { text($0.raw) } == ["b1", "b2"])
    }

    @Test func withoutCheckpointCommitWritesNothing() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\nb\n")
        let records = try await readAll(file, options())
        let source = LineSource(path: file, options: options())
        try await source.commit(records.map(\.position))
        let contents = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(contents == ["in.ndjson"])
    }

    @Test func corruptCheckpointFailsOpenWithAHelpfulError() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\n")
        let checkpoint = try dir.write("in.checkpoint", "not json")
        let source = LineSource(path: file, options: options(checkpoint: checkpoint))
        do {
            try await source.open()
            Issue.record("expected open to fail")
        } catch let error as SourceError {
            #expect(error.description.contains("unreadable"))
            #expect(error.description.contains(checkpoint))
        }
    }

    @Test func missingFileFailsOpen() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let source = LineSource(path: dir.path("nope.ndjson"))
        do {
            try await source.open()
            Issue.record("expected open to fail")
        } catch let error as SourceError {
            #expect(error.description.contains("cannot open"))
        }
    }

    @Test func stopEndsTheStreamAfterTheLinesAlreadyRead() async throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("in.ndjson", "a\nb\nc\n")
        let source = LineSource(path: file)
        try await source.open()
        #expect(try await source.nextBatch(maxRecords: 1)?.map(\.position.offset) == [1])
        await source.stop()
        // Lines the reader took from the input before the stop are handed out (on a pipe
        // nothing else has them), in order; then the stream ends and stays ended.
        var after: [Int64] = []
        while let batch = try await source.nextBatch(maxRecords: 10) { after += batch.map(\.position.offset) }
        #expect(after == Array([2, 3].prefix(after.count)))
        #expect(try await source.nextBatch(maxRecords: 10) == nil)
        try await source.close()
    }

    @Test func stopWakesAReaderWaitingForInputOnAPipe() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[1]) }
        let source = LineSource(path: "/dev/fd/\(ends[0])")
        try await source.open()
        close(ends[0])  // the source opened a descriptor of its own
        #expect(write(ends[1], "a\n", 2) == 2)
        #expect(try await source.nextBatch(maxRecords: 10)?.map(\.raw) == [Array("a".utf8)])
        // The writer stays open and silent: the reader waits for input until the stop wakes it.
        let next = Task { try await source.nextBatch(maxRecords: 10) }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        await source.stop()
        #expect(try await next.value == nil)
        // Without the wake it would wait for input forever (the writer stays open); the bound only allows for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(10))
        try await source.close()
    }

    @Test func unopenedSourceHasNothing() async throws {
        let source = LineSource(path: "/nonexistent")
        #expect(try await source.nextBatch(maxRecords: 1) == nil)
    }
}


import Foundation
import SignetCore
import SignetTestSupport
import Testing

@Suite("AtomicFile: the one way a checkpoint is written")
struct AtomicFileTests {
    @Test("writes, replaces whole, leaves no temporary file; a missing folder is an error naming the file and the reason")
    func writeAndReplace() throws {
        let directory = try TemporaryDirectory(prefix: "signet-atomic")
        defer { directory.remove() }
        let path = directory.path("checkpoint.json")
        try AtomicFile.write(Data("first, and longer".utf8), to: path, what: "the checkpoint")
        try AtomicFile.write(Data("second".utf8), to: path, what: "the checkpoint")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["checkpoint.json"])

        let missing = directory.path("no-such-folder/checkpoint.json")
        let error = #expect(throws: SourceError.self) { try AtomicFile.write(Data("x".utf8), to: missing, what: "the checkpoint") }
        #expect(error?.description.contains("cannot create the checkpoint") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("No such file or directory") == true, "\(error?.description ?? "")")
    }
}

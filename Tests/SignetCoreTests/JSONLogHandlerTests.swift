import Foundation
import Logging
import SignetCore
import Testing

@Suite("JSONLogHandler: one JSON object per line")
struct JSONLogHandlerTests {
    @Test("quotes, newlines and metadata survive as one parseable line per call; levels below the threshold are dropped")
    func linesParse() throws {
        let pipe = Pipe()
        var handler = JSONLogHandler(label: "signet.test", fileDescriptor: pipe.fileHandleForWriting.fileDescriptor)
        handler.logLevel = .info
        handler[metadataKey: "pipeline"] = "stdin"
        let logger = Logger(label: "signet.test") { _ in handler }
        logger.debug("not written")
        logger.info("a \"quoted\"\nmessage", metadata: ["records": "64", "reason": "invalid_signature"])
        logger.error("second")
        try pipe.fileHandleForWriting.close()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 2)
        let first = try #require(JSONSerialization.jsonObject(with: Data(lines[lines.startIndex].utf8)) as? [String: Any])
        #expect(first["message"] as? String == "a \"quoted\"\nmessage")
        #expect(first["level"] as? String == "info")
        #expect(first["label"] as? String == "signet.test")
        #expect((first["time"] as? String)?.hasSuffix("Z") == true)
        let metadata = try #require(first["metadata"] as? [String: String])
        #expect(metadata == ["pipeline": "stdin", "records": "64", "reason": "invalid_signature"])
        let second = try #require(JSONSerialization.jsonObject(with: Data(lines[lines.startIndex + 1].utf8)) as? [String: Any])
        #expect(second["level"] as? String == "error")
    }
}

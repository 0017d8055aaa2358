import Foundation
package import SignetCore

/// Where the console reads the pipeline's dead letters and how it replays one: the `json`
/// dead-letter file the pipeline writes, and (for a webhook pipeline) a post of the kept input
/// to the pipeline's own webhook, which answers after the commit, as `signet dead-letters
/// replay --webhook` does.
public struct ConsoleDeadLetters: Sendable {
    /// The dead-letter file (the `json` format).
    public var file: String
    /// Posts one kept input to the running pipeline and says what became of it (nil: it got
    /// no answer, with why); nil when the pipeline's source is not a webhook (then `signet
    /// dead-letters replay` is the way).
    package var replay: (@Sendable ([UInt8]) async -> Result<DeadLetterReplayOutcome, ReplayFailure>)?

    /// Why a replay got no outcome.
    package struct ReplayFailure: Error, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    package init(file: String, replay: (@Sendable ([UInt8]) async -> Result<DeadLetterReplayOutcome, ReplayFailure>)?) {
        self.file = file
        self.replay = replay
    }

    /// The file's tail read at most: a page shows the newest entries, never the whole file.
    static let tailBytes: UInt64 = 4 << 20

    /// The newest entries, newest first (at most `limit`), from the file's last ``tailBytes``.
    func newest(limit: Int) throws -> [DeadLetterEntry] {
        guard let handle = FileHandle(forReadingAtPath: file) else { return [] }
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        let start = size > Self.tailBytes ? size - Self.tailBytes : 0
        try handle.seek(toOffset: start)
        var text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        // Started mid-file: the first line is a fragment.
        if start > 0, let newline = text.firstIndex(of: "\n") { text = String(text[text.index(after: newline)...]) }
        return Array(DeadLetterEntry.read(contentsOf: text).entries.reversed().prefix(limit))
    }
}

import ArgumentParser
import Foundation
import SignetCore

/// `signet dead-letters`: what a dead-letter file holds, and running it again once the
/// configuration that refused it is fixed.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "Counts dead letters by reason, and replays them once the configuration is fixed.",
        discussion: """
            Works on dead-letter files in the json format (the default `dead_letter: {type: file, format: json}`; the embedded pipeline writes $SIGNET_DATA_DIR/dead-letter.ndjson). Each record keeps the input it refused, whole up to the dead-letter output's max_input_bytes.

            Typical day-one mistake: a wrong SIGNET_BUNDLE_ID or a Production deployment left on Sandbox refuses every real notification. Fix the setting, then:
              cd signet-data
              signet dead-letters stats dead-letter.ndjson
              signet dead-letters replay dead-letter.ndjson --reason bundle_id_mismatch
            """,
        subcommands: [DeadLetterStatsCommand.self, DeadLetterReplayCommand.self])

    /// The records of `files`, in order; a file that cannot be read is a usage error (exit 2).
    static func read(_ files: [String]) throws -> (entries: [(file: String, entry: DeadLetterEntry)], unreadable: [String]) {
        var entries: [(String, DeadLetterEntry)] = []
        var unreadable: [String] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read the dead-letter file '\(file)'")
            }
            let (read, bad) = DeadLetterEntry.read(contentsOf: String(decoding: data, as: UTF8.self))
            entries += read.map { (file, $0) }
            unreadable += bad.map { "\(file): \($0)" }
        }
        return (entries, unreadable)
    }
}

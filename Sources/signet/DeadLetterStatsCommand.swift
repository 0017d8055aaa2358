import ArgumentParser
import Foundation
import SignetCore

/// `signet dead-letters stats FILE...`
struct DeadLetterStatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Counts the dead letters of files by reason: how many, how many distinct inputs, first and last.",
        discussion: """
            A re-run of the same input refuses it again with the same id, so "distinct" counts inputs, not records. Records whose input was cut (longer than max_input_bytes) are counted but cannot be replayed. Lines that are not dead-letter records are counted and named on stderr (exit 1).

            Example:
              signet dead-letters stats signet-data/dead-letter.ndjson
              signet dead-letters stats --json dead-letter.ndjson | jq '.reasons[0]'
            """)

    @Argument(help: "Dead-letter files (json format).")
    var files: [String]

    @Flag(name: .long, help: "One JSON object instead of the table.")
    var json = false

    func run() throws {
        let (entries, unreadable) = try DeadLettersCommand.read(files)
        let statistics = DeadLetterStatistics(entries.map(\.entry), unreadable: unreadable.count)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            FileHandle.standardOutput.write(try encoder.encode(statistics) + Data("\n".utf8))
        } else {
            print(Self.table(statistics))
        }
        for line in unreadable.prefix(10) { Terminal.error("not a dead-letter record: \(line)") }
        if unreadable.count > 10 { Terminal.error("... and \(unreadable.count - 10) more lines that are not dead-letter records") }
        if !unreadable.isEmpty { throw ExitCode.failure }
    }

    static func table(_ statistics: DeadLetterStatistics) -> String {
        var lines = [
            "\(statistics.records) dead letters, \(statistics.distinct) distinct inputs"
                + (statistics.truncated > 0 ? ", \(statistics.truncated) cut (cannot be replayed)" : "")
        ]
        guard !statistics.reasons.isEmpty else { return lines[0] }
        let width = statistics.reasons.map(\.reason.count).max() ?? 0
        let stageWidth = max(5, statistics.reasons.map(\.stage.count).max() ?? 0)
        lines.append(
            "  count  distinct  " + "reason".padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                + "stage".padding(toLength: stageWidth, withPad: " ", startingAt: 0) + "  first .. last rejected")
        for reason in statistics.reasons {
            lines.append(
                "  " + String(reason.count).leftPadded(5) + "  " + String(reason.distinct).leftPadded(8) + "  "
                    + reason.reason.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                    + reason.stage.padding(toLength: stageWidth, withPad: " ", startingAt: 0) + "  "
                    + "\(reason.firstRejectedAt) .. \(reason.lastRejectedAt)")
            if !reason.exampleDetail.isEmpty { lines.append("         e.g. \(reason.exampleDetail)") }
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

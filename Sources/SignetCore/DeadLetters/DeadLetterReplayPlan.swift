/// Which dead letters a replay runs, as records: each distinct kept input once, of the
/// reasons asked for, in file order. Positions name the file and line a record came from,
/// so one refused again is traced back to its dead letter.
package struct DeadLetterReplayPlan: Sendable, CustomStringConvertible {
    package var records: [Record]
    /// Dead letters of the chosen reasons (all when none was chosen).
    package var selected = 0
    /// Of those, inputs seen before in the files (a re-run refused them again).
    package var repeats = 0
    /// Of those, inputs cut when they were written: they cannot be replayed.
    package var cut = 0
    /// Dead letters left out because of their reason.
    package var otherReasons = 0

    /// - Parameters:
    ///   - entries: the dead letters read, each with the file it came from.
    ///   - reasons: the reason codes to replay; empty for every reason.
    package init(_ entries: [(file: String, entry: DeadLetterEntry)], reasons: Set<String>) {
        var seen: Set<[UInt8]> = []
        records = []
        for (file, entry) in entries {
            guard reasons.isEmpty || reasons.contains(entry.reason) else {
                otherReasons += 1
                continue
            }
            selected += 1
            guard let input = entry.input else {
                cut += 1
                continue
            }
            guard seen.insert(input).inserted else {
                repeats += 1
                continue
            }
            records.append(Record(raw: input, position: SourcePosition(stream: "replay:\(file)", offset: Int64(entry.line))))
        }
    }

    package var description: String {
        var parts = ["\(selected) dead letters selected"]
        if otherReasons > 0 { parts.append("\(otherReasons) of other reasons left out") }
        if repeats > 0 { parts.append("\(repeats) repeats of an input skipped") }
        if cut > 0 { parts.append("\(cut) cut when written (cannot be replayed)") }
        return parts.joined(separator: ", ") + ": replaying \(records.count) inputs"
    }
}

/// What became of the inputs a replay ran, by outcome.
package struct DeadLetterReplayOutcome: Sendable, Equatable, CustomStringConvertible {
    package var replayed = 0
    /// Verified now and processed (state written, events published).
    package var processed = 0
    /// Processed before (dropped by dedupe).
    package var duplicates = 0
    /// Events the processed inputs published (nil when the replay went through a webhook).
    package var events: Int?
    /// Refused again, by reason (dead-lettered again).
    package var refusedByReason: [String: Int] = [:]
    /// Inputs that got no verdict (a webhook that kept failing), by what went wrong.
    package var unanswered: [String: Int] = [:]

    package var refusedAgain: Int { refusedByReason.values.reduce(0, +) }

    package init() {}

    /// The outcome of a pipeline run over the replayed records.
    package init(_ summary: RunSummary) {
        replayed = summary.read
        processed = summary.passed
        duplicates = summary.dropped
        events = summary.delivered
        refusedByReason = summary.rejectedByReason
    }

    package var description: String {
        var text = "replayed \(replayed) input\(replayed == 1 ? "" : "s"): \(processed) processed"
        if let events { text += " (\(events) events)" }
        text += ", \(duplicates) processed before (dropped as duplicates), \(refusedAgain) refused again"
        if refusedAgain > 0 { text += " (" + Self.list(refusedByReason) + "; dead-lettered again)" }
        if !unanswered.isEmpty {
            text += ", \(unanswered.values.reduce(0, +)) without an answer (" + Self.list(unanswered) + "; replay them again)"
        }
        return text
    }

    private static func list(_ counts: [String: Int]) -> String {
        counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}

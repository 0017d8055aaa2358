/// What became of the inputs a replay ran, by outcome.
public struct DeadLetterReplayOutcome: Sendable, Equatable, CustomStringConvertible {
    public var replayed = 0
    /// Verified now and processed (state written, events published).
    public var processed = 0
    /// Processed before (dropped by dedupe).
    public var duplicates = 0
    /// Events the processed inputs published (nil when the replay went through a webhook).
    public var events: Int?
    /// Refused again, by reason (dead-lettered again).
    public var refusedByReason: [String: Int] = [:]
    /// Inputs that got no verdict (a webhook that kept failing), by what went wrong.
    public var unanswered: [String: Int] = [:]

    public var refusedAgain: Int { refusedByReason.values.reduce(0, +) }

    public init() {}

    /// The outcome of a pipeline run over the replayed records.
    public init(_ summary: RunSummary) {
        replayed = summary.read
        processed = summary.passed
        duplicates = summary.dropped
        events = summary.delivered
        refusedByReason = summary.rejectedByReason
    }

    public var description: String {
        var text = "replayed \(replayed) inputs: \(processed) processed"
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

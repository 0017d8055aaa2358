/// What a dead-letter file holds, by reason: `signet dead-letters stats`.
public struct DeadLetterStatistics: Sendable, Equatable, Encodable {
    /// The records of one reason.
    public struct Reason: Sendable, Equatable, Encodable {
        public var reason: String
        public var count: Int
        /// Distinct inputs (a re-run refuses the same input again, with the same id).
        public var distinct: Int
        public var firstRejectedAt: String
        public var lastRejectedAt: String
        /// The stage that refused them (the most frequent one) and one detail, as an example.
        public var stage: String
        public var exampleDetail: String
    }

    public var records: Int
    public var distinct: Int
    /// Records whose input was cut when written: counted, but they cannot be replayed.
    public var truncated: Int
    public var unreadableLines: Int
    /// Most frequent first.
    public var reasons: [Reason]

    public init(_ entries: [DeadLetterEntry], unreadable: Int = 0) {
        records = entries.count
        distinct = Set(entries.map(\.id)).count
        truncated = entries.count { $0.input == nil }
        unreadableLines = unreadable
        reasons = Dictionary(grouping: entries, by: \.reason).map { reason, group in
            let times = group.map(\.rejectedAt).filter { !$0.isEmpty }.sorted()
            let stages = Dictionary(grouping: group, by: \.stage).max { $0.value.count < $1.value.count }?.key ?? ""
            return Reason(
                reason: reason, count: group.count, distinct: Set(group.map(\.id)).count,
                firstRejectedAt: times.first ?? "", lastRejectedAt: times.last ?? "", stage: stages,
                exampleDetail: group.first?.detail ?? "")
        }
        .sorted { ($0.count, $1.reason) > ($1.count, $0.reason) }
    }
}

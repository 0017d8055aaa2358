/// What a dead-letter file holds, by reason: `signet dead-letters stats`.
package struct DeadLetterStatistics: Sendable, Equatable, Encodable {
    /// The records of one reason.
    package struct Reason: Sendable, Equatable, Encodable {
        package var reason: String
        package var count: Int
        /// Distinct inputs (a re-run refuses the same input again, with the same id).
        package var distinct: Int
        package var firstRejectedAt: String
        package var lastRejectedAt: String
        /// The stage that refused them (the most frequent one) and one detail, as an example.
        package var stage: String
        package var exampleDetail: String
    }

    package var records: Int
    package var distinct: Int
    /// Records whose input was cut when written: counted, but they cannot be replayed.
    package var truncated: Int
    package var unreadableLines: Int
    /// Most frequent first.
    package var reasons: [Reason]

    package init(_ entries: [DeadLetterEntry], unreadable: Int = 0) {
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

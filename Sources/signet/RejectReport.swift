import SignetCore

/// What a finished run's rejections say to its operator: a warning when nothing got through,
/// and the `--fail-on-reject-ratio` check.
struct RejectReport {
    let summary: RunSummary

    /// The most frequent reject reason and its count (ties broken by name, for stable output).
    var topReason: (reason: String, count: Int)? {
        summary.rejectedByReason.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key }
            .map { ($0.key, $0.value) }
    }

    /// A warning line when every record read was rejected, naming the top reason.
    var allRejectedWarning: String? {
        guard summary.read > 0, summary.rejected >= summary.read else { return nil }
        let reason = topReason.map { "; top reason: \($0.reason) (\($0.count))" } ?? ""
        return "warning: every record (\(summary.read)) was rejected\(reason)"
    }

    /// A failure line when more than `ratio` of the records read were rejected.
    func exceeds(_ ratio: Double) -> String? {
        guard summary.read > 0 else { return nil }
        let share = Double(summary.rejected) / Double(summary.read)
        guard share > ratio else { return nil }
        let reason = topReason.map { "; top reason: \($0.reason) (\($0.count))" } ?? ""
        return "rejected \(summary.rejected) of \(summary.read) records, more than --fail-on-reject-ratio \(ratio)\(reason)"
    }
}

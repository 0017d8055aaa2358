import SignetHTTP
import Testing

/// `signet top`'s reading of /metrics: the Prometheus text parsed (labels with escapes), rates
/// between two scrapes, the sections an instance's metrics call for.
@Suite("signet top: metrics snapshots and the view")
struct TopViewTests {
    @Test func snapshotsReadLabelsValuesAndSkipWhatTheyCannotRead() {
        let snapshot = MetricsSnapshot(text: """
            # HELP signet_records_read_total x
            # TYPE signet_records_read_total counter
            signet_records_read_total 120
            signet_records_rejected_total{reason="malformed_json"} 3
            signet_records_rejected_total{reason="bundle_id_mismatch",stage="verify"} 2
            signet_odd{note="a \\"quoted\\", comma"} 7
            not a sample line
            """, at: 10)
        #expect(snapshot.total("signet_records_read_total") == 120)
        #expect(snapshot.total("signet_records_rejected_total") == 5)
        #expect(snapshot.total("signet_records_rejected_total", matching: ["reason": "malformed_json"]) == 3)
        #expect(snapshot.totals("signet_records_rejected_total", by: "reason") == ["malformed_json": 3, "bundle_id_mismatch": 2])
        #expect(snapshot.samples["signet_odd"]?.first?.labels["note"] == #"a "quoted", comma"#)
        #expect(snapshot.total("signet_missing") == nil)
    }

    @Test func theViewShowsRatesBetweenScrapesAndOnlyTheSectionsTheInstanceExports() {
        let before = MetricsSnapshot(text: """
            signet_records_read_total 100
            signet_records_passed_total 90
            signet_records_rejected_total{reason="malformed_json"} 10
            signet_events_total{type="renewed"} 50
            signet_batch_duration_seconds_sum 1.0
            signet_batch_duration_seconds_count 100
            """, at: 0)
        let after = MetricsSnapshot(text: """
            signet_records_read_total 300
            signet_records_passed_total 280
            signet_records_rejected_total{reason="malformed_json"} 30
            signet_events_total{type="renewed"} 150
            signet_batch_duration_seconds_sum 3.0
            signet_batch_duration_seconds_count 200
            signet_consumption_pending 2
            signet_consumption_oldest_pending_age_seconds 42
            """, at: 2)
        let lines = TopView(previous: before, current: after, now: 1_000).lines(source: "http://x")
        let text = lines.joined(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("  read") && $0.contains("100") && $0.hasSuffix("300") }, "\(text)")
        #expect(lines.contains { $0.hasPrefix("  rejected") && $0.contains("10") }, "\(text)")
        #expect(lines.contains { $0.contains("malformed_json") && $0.hasSuffix("10/s") }, "\(text)")
        #expect(lines.contains { $0.contains("renewed") && $0.hasSuffix("50/s") }, "\(text)")
        #expect(lines.contains { $0.contains("batch") && $0.contains("20.0 ms") }, "\(text)")
        #expect(text.contains("REFUND QUESTIONS") && text.contains("pending           2, oldest 42 s"), "\(text)")
        #expect(!text.contains("KAFKA") && !text.contains("DELIVERY HEALTH") && !text.contains("SINKS"), "\(text)")
    }

    @Test("a forward sink's receivers (issue 53): queued, oldest, sends and retries per second, given up")
    func forwardQueuesAreShown() {
        let before = MetricsSnapshot(text: """
            signet_forward_pending{sink="staging",target="http://a/x"} 10
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="retry"} 100
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="delivered"} 0
            """, at: 0)
        let after = MetricsSnapshot(text: """
            signet_forward_pending{sink="staging",target="http://a/x"} 12
            signet_forward_oldest_pending_seconds{sink="staging",target="http://a/x"} 95
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="retry"} 140
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="delivered"} 0
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="refused"} 2
            signet_forward_attempts_total{sink="staging",target="http://a/x",result="expired"} 1
            """, at: 2)
        let lines = TopView(previous: before, current: after, now: 2).lines(source: "x")
        let section = lines.drop { !$0.hasPrefix("FORWARDING") }
        #expect(section.count >= 3, "\(lines)")
        #expect(section.dropFirst().first == "  http://a/x")
        let figures = section.dropFirst(2).first?.split(separator: " ").map(String.init) ?? []
        #expect(figures == ["12", "95", "s", "0", "20", "3"], "\(figures)")
        // No forward sink: no section.
        #expect(!TopView(previous: after, current: MetricsSnapshot(text: "signet_records_read_total 1", at: 3), now: 3)
            .lines(source: "x").contains { $0.hasPrefix("FORWARDING") })
    }
}
